import { AppError } from '../errors.js'
import { compileFilter, type FieldMap, type SqlFragment } from './filter.js'

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
  where: SqlFragment
  orderBy: string
  limit: number
  offset: number
}

export interface ListPage<T> {
  items: T[]
  limit: number
  offset: number
  totalCount: number
}

export interface ListSpec {
  /** Fields usable in `filter`. */
  filterable: FieldMap
  /** Fields usable in `sort` (public name to column). */
  sortable: Record<string, string>
  /** Tie-breaker column appended to every order. */
  idColumn: string
}

export const DEFAULT_LIMIT = 10
export const MAX_LIMIT = 500
const MAX_OFFSET = 1_000_000

function pagination(field: 'limit' | 'offset', raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) {
    throw new AppError('INVALID_PAGINATION', {
      cause: { field, reason: 'must be a non-negative integer', value: raw },
    })
  }
  const n = Number(raw)
  if (field === 'offset' && n > MAX_OFFSET) {
    throw new AppError('INVALID_PAGINATION', {
      cause: { field, reason: `must be at most ${MAX_OFFSET}`, value: raw },
    })
  }
  return n
}

function compileSort(raw: string | undefined, spec: ListSpec): string {
  const tie = `${spec.idColumn} ASC`
  if (raw === undefined || raw.trim() === '') return tie
  const parts: string[] = []
  for (const item of raw.split(',')) {
    const m = /^\s*([A-Za-z_][\w.]*)(?:\s+(asc|desc))?\s*$/i.exec(item)
    const name = m?.[1]
    const column =
      name !== undefined && Object.hasOwn(spec.sortable, name) ? spec.sortable[name] : undefined
    if (!m || column === undefined) {
      throw new AppError('INVALID_SORT_IDENTIFIER', {
        cause: {
          field: 'sort',
          reason: `use "<field> asc|desc" with fields ${Object.keys(spec.sortable).join(', ')}`,
          value: raw,
        },
      })
    }
    parts.push(`${column} ${(m[2] ?? 'asc').toUpperCase()}`)
  }
  return [...parts, tie].join(', ')
}

/** Validates list parameters against a resource's fields; throws AppError with a stable code. */
export function parseListQuery(params: ListParams, spec: ListSpec): ListQuery {
  const limit = pagination('limit', params.limit, DEFAULT_LIMIT)
  return {
    where: compileFilter(params.filter, spec.filterable),
    orderBy: compileSort(params.sort, spec),
    limit: limit === 0 ? DEFAULT_LIMIT : Math.min(limit, MAX_LIMIT),
    offset: pagination('offset', params.offset, 0),
  }
}
