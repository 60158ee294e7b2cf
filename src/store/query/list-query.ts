import { AppError } from '../../errors.js'
import { type Condition, type FieldMap, parseFilter, type SortKey } from './filter.js'

export type { FieldMap, FieldSpec } from './filter.js'

/** List parameters as they arrive on the query string. */
export interface ListParams {
  filter?: string | undefined
  sort?: string | undefined
  limit?: string | undefined
  offset?: string | undefined
}

/** What a repository needs to run a list: a condition, an order and a page. */
export interface ListQuery {
  where: Condition
  /** Sort keys, the id tie-breaker last. */
  orderBy: SortKey[]
  /** Undefined for every match (`limit none`). */
  limit: number | undefined
  offset: number
}

export interface ListPage<T> {
  items: T[]
  /** -1 when the filter said `limit none`. */
  limit: number
  offset: number
  totalCount: number
}

export interface ListSpec {
  /** Fields usable in `filter`. */
  filterable: FieldMap
  /** Fields usable in `sort` and `sort by` (public name to column). */
  sortable: Record<string, string>
  /** Tie-breaker column appended to every order. */
  idColumn: string
  /** The most comparisons a `filter` may make (default MAX_COMPARISONS of ./filter.ts). */
  maxComparisons?: number
  /**
   * Refuses `limit=-1` and the filter's `limit none` (every match at once): for a list that grows
   * with traffic rather than with an admin's changes (the audit trail, a row per login), where a
   * page of everything would be read, held and serialised whole by one request.
   */
  pagedOnly?: boolean
}

export const DEFAULT_LIMIT = 10
export const MAX_LIMIT = 500
const MAX_OFFSET = 1_000_000

function paginationError(field: string, reason: string, value: string): AppError {
  return new AppError('INVALID_PAGINATION', { cause: { field, reason, value } })
}

function integer(field: 'limit' | 'offset', raw: string): number {
  if (!/^-?\d+$/.test(raw)) throw paginationError(field, 'must be an integer', raw)
  return Number(raw)
}

/**
 * The `limit` parameter as OpenZiti reads it: -1 is no limit (as the filter's `limit none`; the
 * console asks `limit=-1` for its pickers), 0 or below -1 the list's default, above 500 capped later.
 */
function limitParam(raw: string | undefined, byDefault: number | 'none'): number | 'none' {
  if (raw === undefined || raw === '') return byDefault
  const n = integer('limit', raw)
  return n === -1 ? 'none' : n === 0 || n < -1 ? byDefault : n
}

/** The `offset` parameter as OpenZiti reads it: a negative offset is 0. */
function offsetParam(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 0
  const n = integer('offset', raw)
  if (n > MAX_OFFSET) throw paginationError('offset', `must be at most ${MAX_OFFSET}`, raw)
  return Math.max(n, 0)
}

function clampLimit(limit: number, byDefault: number | 'none'): number | undefined {
  if (limit !== 0) return Math.min(limit, MAX_LIMIT)
  return byDefault === 'none' ? undefined : byDefault
}

function sortParam(raw: string | undefined, spec: ListSpec): SortKey[] {
  if (raw === undefined || raw.trim() === '') return []
  return raw.split(',').map((item) => {
    const m = /^\s*([A-Za-z_][\w.]*)(?:\s+(asc|desc))?\s*$/i.exec(item)
    const name = m?.[1]
    if (name === undefined || !Object.hasOwn(spec.sortable, name)) {
      throw new AppError('INVALID_SORT_IDENTIFIER', {
        cause: {
          field: 'sort',
          reason: `use "<field> asc|desc" with fields ${Object.keys(spec.sortable).join(', ')}`,
          value: raw,
        },
      })
    }
    return { column: spec.sortable[name] ?? name, desc: m?.[2]?.toLowerCase() === 'desc' }
  })
}

/** Repeated query parameters arrive as arrays when a route does not validate them as strings. */
function text(field: keyof ListParams, value: unknown): string | undefined {
  if (value === undefined || typeof value === 'string') return value
  throw new AppError('COULD_NOT_VALIDATE', { cause: { field, reason: 'must be a single string' } })
}

/**
 * Validates list parameters against a resource's fields; throws AppError with a stable code.
 * As upstream: `skip` and `limit` clauses in the filter win over the `offset` and `limit`
 * parameters; the `sort` parameter applies only when the filter has no `sort by`.
 */
export function parseListQuery(
  params: ListParams,
  spec: ListSpec,
  /** The page size without a `limit` (default `DEFAULT_LIMIT`; `none`: every match). */
  byDefault: number | 'none' = DEFAULT_LIMIT,
): ListQuery {
  const limitValue = limitParam(text('limit', params.limit), byDefault)
  const offsetValue = offsetParam(text('offset', params.offset))
  const sortKeys = sortParam(text('sort', params.sort), spec)
  const filter = parseFilter(
    text('filter', params.filter),
    spec.filterable,
    spec.sortable,
    spec.maxComparisons,
  )
  if (filter.skip !== undefined && filter.skip > MAX_OFFSET) {
    throw new AppError('INVALID_FILTER', {
      cause: {
        field: 'filter',
        reason: `skip must be at most ${MAX_OFFSET}`,
        value: `${filter.skip}`,
      },
    })
  }
  const sort = filter.sort.length > 0 ? filter.sort : sortKeys
  const limit = filter.limit ?? limitValue
  if (limit === 'none' && spec.pagedOnly) {
    const reason = `every match at once is refused on this list: page with a limit of at most ${MAX_LIMIT}`
    if (filter.limit === 'none') {
      throw new AppError('INVALID_FILTER', {
        cause: { field: 'filter', reason, value: 'limit none' },
      })
    }
    throw paginationError('limit', reason, params.limit ?? '')
  }
  return {
    where: filter.where,
    orderBy: [...sort, { column: spec.idColumn, desc: false }],
    limit: limit === 'none' ? undefined : clampLimit(limit, byDefault),
    offset: filter.skip ?? offsetValue,
  }
}
