import { AppError, fieldError } from './errors.js'

const NAMES = {
  signer: 'external JWT signer',
  identity: 'identity',
  policy: 'authentication policy',
} as const

/** 404 NOT_FOUND for an unknown id of a resource (`field` names where the id came from). */
export function notFound(entity: keyof typeof NAMES, id: string, field = 'id'): AppError {
  return new AppError('NOT_FOUND', {
    cause: { field, reason: `no ${NAMES[entity]} with id ${id}`, value: id },
  })
}

export interface PatchRules<T> {
  /** What `null` resets a field to; a field with no default and not required becomes null. */
  defaults: Partial<T>
  /** Fields that may not be null. */
  required: readonly (keyof T)[]
  /** Object fields merged key by key at any depth instead of replaced. */
  deep?: readonly (keyof T)[]
}

function merge(base: unknown, patch: unknown): unknown {
  if (patch === undefined) return base
  const isObject = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
  if (!isObject(patch) || !isObject(base)) return patch
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(patch)) out[key] = merge(out[key], value)
  return out
}

/** True when `key` is an own key of `value`, which the compiler then knows as one of its keys. */
function isOwnKey<T extends object>(value: T, key: PropertyKey): key is keyof T {
  return Object.hasOwn(value, key)
}

/**
 * The one way a PATCH applies: only the keys present change; `null` resets a field to its default
 * (or clears it), and is refused on required fields; `deep` fields merge at any depth.
 */
export function applyPatch<T extends object>(
  current: T,
  patch: { [K in keyof T]?: unknown },
  rules: PatchRules<T>,
): T {
  const next: Record<string, unknown> = { ...(current as Record<string, unknown>) } // a plain record
  for (const key of Object.keys(patch)) {
    if (!isOwnKey(current, key)) continue
    const value = patch[key]
    if (value === undefined) continue
    if (value === null) {
      if (rules.required.includes(key)) {
        throw fieldError('COULD_NOT_VALIDATE', key, `${key} cannot be null`)
      }
      next[key] = Object.hasOwn(rules.defaults, key) ? rules.defaults[key] : null
    } else {
      next[key] = rules.deep?.includes(key) ? merge(current[key], value) : value
    }
  }
  return next as T // same keys as current, each replaced by a value of the patch body's schema
}

export type { ListPage, ListParams } from './store/query/list-query.js'
