import { isDeepStrictEqual } from 'node:util'

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v)

const RECORD_KEYS = ['id', 'createdAt', 'updatedAt']

function walk(value: Record<string, unknown>, prefix: string, keep: (v: unknown) => boolean) {
  const out: string[] = []
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || !keep(v)) continue
    const path = prefix === '' ? key : `${prefix}.${key}`
    if (prefix !== '' && isObject(v)) out.push(...walk(v, path, keep))
    else out.push(path)
  }
  return out
}

/**
 * The field names a request body names (never its values): every key present, or with `setOnly`
 * only those with a value (not null, not ""). Inside the `deep` objects the names are dotted paths
 * to the leaves (`primary.updb.minPasswordLength`).
 */
export function bodyFields(body: object, deep: readonly string[] = [], setOnly = false): string[] {
  const keep = (v: unknown) => !setOnly || (v !== null && v !== '')
  const out: string[] = []
  for (const [key, v] of Object.entries(body)) {
    if (v === undefined || !keep(v)) continue
    if (deep.includes(key) && isObject(v)) out.push(...walk(v, key, keep))
    else out.push(key)
  }
  return out
}

/** The names of the fields that differ between two versions of a record (dotted inside `deep`). */
export function differingFields(
  before: object,
  after: object,
  deep: readonly string[] = [],
  prefix = '',
): string[] {
  const a = before as Record<string, unknown> // read key by key only
  const b = after as Record<string, unknown> // read key by key only
  const out: string[] = []
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (prefix === '' && RECORD_KEYS.includes(key)) continue
    const path = prefix === '' ? key : `${prefix}.${key}`
    const [x, y] = [a[key], b[key]]
    if ((prefix !== '' || deep.includes(key)) && isObject(x) && isObject(y)) {
      out.push(...differingFields(x, y, deep, path))
    } else if (!isDeepStrictEqual(x, y)) out.push(path)
  }
  return out
}
