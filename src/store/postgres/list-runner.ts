import { compileCondition, SqlParams } from '../query/filter-sql.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import { postgresDialect } from '../query/sql-dialect.js'
import type { Queryable } from './connection.js'
import { mapPgError } from './errors.js'

/**
 * Runs list queries against one relation. The condition and order come from `parseListQuery`,
 * which only ever yields whitelisted column names, and every value is bound.
 */
export class PgListRunner<Row, T> {
  constructor(
    private readonly from: string,
    private readonly map: (row: Row) => T,
  ) {}

  async run(db: Queryable, query: ListQuery, baseCondition = 'true'): Promise<ListPage<T>> {
    const params = new SqlParams(postgresDialect)
    const filter = compileCondition(query.where, postgresDialect, params)
    const where = `(${baseCondition}) AND (${filter.sql})`
    const orderBy = query.orderBy.map((k) => `${k.column} ${k.desc ? 'DESC' : 'ASC'}`).join(', ')
    const n = filter.params.length
    const page =
      query.limit === undefined ? ` OFFSET $${n + 1}` : ` LIMIT $${n + 1} OFFSET $${n + 2}`
    const pageParams = query.limit === undefined ? [query.offset] : [query.limit, query.offset]
    try {
      const [rows, count] = await Promise.all([
        db.query(`SELECT * FROM ${this.from} WHERE ${where} ORDER BY ${orderBy}${page}`, [
          ...filter.params,
          ...pageParams,
        ]),
        db.query(`SELECT count(*)::int AS n FROM ${this.from} WHERE ${where}`, filter.params),
      ])
      return {
        items: (rows.rows as Row[]).map(this.map), // columns of `from`
        limit: query.limit ?? -1,
        offset: query.offset,
        totalCount: (count.rows[0] as { n: number }).n, // count(*) always yields a row
      }
    } catch (err) {
      throw mapPgError(err)
    }
  }
}
