import type { ListPage, ListQuery } from '../list-query.js'
import { mapPgError } from './errors.js'
import type { Queryable } from './pool.js'

/** Numbers the `?` placeholders of compiled SQL as `$1, $2, ...` from `first`. */
export function numbered(sql: string, first = 1): string {
  let n = first
  return sql.replace(/\?/g, () => `$${n++}`)
}

/**
 * Runs list queries against one table. The condition and order come from `parseListQuery`, which
 * only ever emits whitelisted column names and placeholders, never user values.
 */
export class PgListRunner<Row, T> {
  constructor(
    private readonly from: string,
    private readonly map: (row: Row) => T,
  ) {}

  async run(db: Queryable, query: ListQuery): Promise<ListPage<T>> {
    const where = numbered(query.where.sql)
    const n = query.where.params.length
    const page = query.limit < 0 ? '' : ` LIMIT $${n + 1} OFFSET $${n + 2}`
    const pageParams = query.limit < 0 ? [] : [query.limit, query.offset]
    try {
      const [rows, count] = await Promise.all([
        db.query(`SELECT * FROM ${this.from} WHERE ${where} ORDER BY ${query.orderBy}${page}`, [
          ...query.where.params,
          ...pageParams,
        ]),
        db.query(`SELECT count(*)::int AS n FROM ${this.from} WHERE ${where}`, query.where.params),
      ])
      return {
        items: (rows.rows as Row[]).map(this.map), // columns of `from`
        limit: query.limit,
        offset: query.offset,
        totalCount: (count.rows[0] as { n: number }).n, // count(*) always yields a row
      }
    } catch (err) {
      throw mapPgError(err)
    }
  }
}
