import { parseDuration } from '../duration.js'
import { fieldError } from '../errors.js'
import type { ClaimCondition, TokenRules } from '../store/contract.js'
import { globProblem } from './glob.js'

export const MAX_AUDIENCES = 20
export const MAX_CONDITIONS = 32
export const MAX_ONE_OF = 32
const MAX_SKEW_MS = 5 * 60_000
const OPERATORS = ['equals', 'oneOf', 'contains', 'matches', 'exists'] as const

const bad = (field: string, reason: string, value?: unknown) =>
  fieldError('COULD_NOT_VALIDATE', field, reason, value)

/** RFC 6901, and not the whole document: `/name`, `/a/b`, `~0`/`~1` escapes only. */
function checkPointer(field: string, pointer: string): void {
  if (!pointer.startsWith('/') || pointer.length < 2 || /~(?![01])/.test(pointer)) {
    throw bad(
      field,
      'must be a JSON pointer to a claim, such as /azp or /realm_access/roles',
      pointer,
    )
  }
}

function checkCondition(field: string, c: ClaimCondition): void {
  checkPointer(`${field}.claim`, c.claim)
  const present = OPERATORS.filter((op) => c[op] !== undefined)
  if (present.length !== 1) {
    throw bad(field, `needs exactly one of ${OPERATORS.join(', ')}`)
  }
  if (c.oneOf !== undefined && (c.oneOf.length === 0 || c.oneOf.length > MAX_ONE_OF)) {
    throw bad(`${field}.oneOf`, `must hold 1 to ${MAX_ONE_OF} values`)
  }
  if (c.contains === '') throw bad(`${field}.contains`, 'must not be empty')
  if (c.matches !== undefined) {
    const problem = c.matches === '' ? 'must not be empty' : globProblem(c.matches)
    if (problem) throw bad(`${field}.matches`, problem, c.matches)
  }
}

function checkDuration(field: string, text: string | undefined, maxMs?: number): void {
  if (text === undefined) return
  // The controller's own durations: past Go's limit is still a (very long) duration.
  const ms = parseDuration(text, { goLimit: false })
  if (ms === undefined) throw bad(field, 'must be a duration such as 10m or 1h30m', text)
  if (maxMs === undefined ? ms <= 0 : ms < 0 || ms > maxMs) {
    throw bad(field, maxMs === undefined ? 'must be positive' : 'must be from 0 to 5m', text)
  }
}

/**
 * Checks a signer's token rules beyond what the request schema says (pointer and glob syntax,
 * one operator per condition, durations). Throws AppError COULD_NOT_VALIDATE naming the member,
 * for example `tokenRules.claims[2].claim`.
 */
export function checkTokenRules(rules: TokenRules | null, field = 'tokenRules'): void {
  if (rules === null) return
  const { audiences, claims } = rules
  if (audiences !== undefined) {
    if (audiences.length === 0 || audiences.length > MAX_AUDIENCES)
      throw bad(`${field}.audiences`, `must hold 1 to ${MAX_AUDIENCES} audiences`)
    const empty = audiences.indexOf('')
    if (empty !== -1) throw bad(`${field}.audiences[${empty}]`, 'must not be empty')
  }
  if (claims !== undefined) {
    if (claims.length > MAX_CONDITIONS)
      throw bad(`${field}.claims`, `must hold at most ${MAX_CONDITIONS} conditions`)
    for (const [i, c] of claims.entries()) checkCondition(`${field}.claims[${i}]`, c)
  }
  checkDuration(`${field}.maxTokenLifetime`, rules.maxTokenLifetime)
  checkDuration(`${field}.maxTokenAge`, rules.maxTokenAge)
  checkDuration(`${field}.clockSkew`, rules.clockSkew, MAX_SKEW_MS)
}

/** A PATCH of token rules: members present replace the stored ones; a null member removes it. */
export type TokenRulesPatch = { [K in keyof TokenRules]?: TokenRules[K] | null }

/** Merges a PATCH's token rules member by member onto the stored ones. */
export function mergeTokenRules(current: TokenRules | null, patch: TokenRulesPatch): TokenRules {
  const next: Record<string, unknown> = { ...current }
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key]
    else if (value !== undefined) next[key] = value
  }
  return next as TokenRules // the keys of both are TokenRules members
}
