import type { Statement } from 'better-sqlite3'
import type { Db } from './db.js'
import type { ListPage, ListQuery } from './list-query.js'

const MAX_CACHED_STATEMENTS = 200

/**
 * Runs list queries against one table. The condition and order come from `parseListQuery`, which
 * only ever emits whitelisted column names and `?` placeholders, so the SQL text varies with the
 * shape of the filter, never with user values; prepared statements are cached per shape.
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
    const where = `(${baseCondition}) AND (${query.where.sql})`
    const rows = this.prepare(
      `SELECT * FROM ${this.from} WHERE ${where} ORDER BY ${query.orderBy} LIMIT ? OFFSET ?`,
    ).all(...query.where.params, query.limit, query.offset) as Row[] // columns of `from`
    const count = this.prepare(`SELECT count(*) AS n FROM ${this.from} WHERE ${where}`).get(
      ...query.where.params,
    ) as { n: number }
    return {
      items: rows.map(this.map),
      limit: query.limit,
      offset: query.offset,
      totalCount: count.n,
    }
  }
}
