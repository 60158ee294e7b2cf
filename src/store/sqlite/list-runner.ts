import type { Statement } from 'better-sqlite3'
import { compileCondition, SqlParams } from '../query/filter-sql.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import { sqliteDialect } from '../query/sql-dialect.js'
import type { Db } from './connection.js'
import { mapDataError } from './errors.js'

const MAX_CACHED_STATEMENTS = 200

/**
 * Runs list queries against one SQLite table. The condition and order come from `parseListQuery`,
 * which only ever yields whitelisted column names, and every value is bound, so the SQL text
 * varies with the shape of the filter, never with user values; prepared statements are cached per
 * shape.
 */
export class ListRunner<Row, T> {
  private readonly statements = new Map<string, Statement<unknown[]>>()

  constructor(
    private readonly db: Db,
    private readonly from: string,
    private readonly map: (row: Row) => T,
  ) {}

  private prepare(sql: string): Statement<unknown[]> {
    let stmt = this.statements.get(sql)
    if (!stmt) {
      if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.clear()
      stmt = this.db.prepare<unknown[]>(sql)
      this.statements.set(sql, stmt)
    }
    return stmt
  }

  run(query: ListQuery, baseCondition = '1 = 1'): ListPage<T> {
    const filter = compileCondition(query.where, sqliteDialect, new SqlParams(sqliteDialect))
    const where = `(${baseCondition}) AND (${filter.sql})`
    try {
      return this.page(query, filter.params, where)
    } catch (err) {
      throw mapDataError(err)
    }
  }

  private page(query: ListQuery, params: unknown[], where: string): ListPage<T> {
    const orderBy = query.orderBy.map((k) => `${k.column} ${k.desc ? 'DESC' : 'ASC'}`).join(', ')
    // SQLite reads a negative LIMIT as "no limit".
    const rows = this.prepare(
      `SELECT * FROM ${this.from} WHERE ${where} ORDER BY ${orderBy} LIMIT ? OFFSET ?`,
    ).all(...params, query.limit ?? -1, query.offset) as Row[] // columns of `from`
    const count = this.prepare(`SELECT count(*) AS n FROM ${this.from} WHERE ${where}`).get(
      ...params,
    ) as { n: number } // count(*) always yields a row
    return {
      items: rows.map(this.map),
      limit: query.limit ?? -1,
      offset: query.offset,
      totalCount: count.n,
    }
  }
}
