import type { JWTPayload } from 'jose'
import { parseDuration } from '../duration.js'
import type { ClaimCondition, SignerRecord, TokenRules } from '../store/contract.js'
import { globMatches } from './glob.js'

export type { ClaimCondition, TokenRules }

/** Why a token broke a signer's rules: a refusal kind, the rule's path and its operator note. */
export interface RuleRefusal {
  kind: 'claim_condition' | 'token_lifetime' | 'token_age'
  /** The member at fault, as validation errors name it (`tokenRules.claims[2]`). */
  rule: string
  /** A log-safe reason: it names the claim and operator, never the claim's value. */
  reason: string
  /** The condition's `message`, for operators only. */
  message?: string | undefined
}

type Test = (value: unknown) => boolean

interface CompiledCondition {
  path: string[]
  test: Test
  describe: string
  message: string | undefined
}

/** A signer's rules, parsed once per stored record (durations in ms, pointers split). */
export interface CompiledRules {
  /** What jose checks `aud` against: the signer's audience, or it and the extra ones. */
  audience: string | string[]
  clockSkewMs: number | undefined
  maxLifetimeMs: number | undefined
  maxAgeMs: number | undefined
  sessionEndsWithToken: boolean
  conditions: CompiledCondition[]
}

/** Splits an RFC 6901 pointer (`/a/b~1c`) into its reference tokens. */
export function pointerTokens(pointer: string): string[] {
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => raw.replaceAll('~1', '/').replaceAll('~0', '~'))
}

function resolve(claims: JWTPayload, path: string[]): unknown {
  let node: unknown = claims
  for (const key of path) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined
    node = (node as Record<string, unknown>)[key] // an object, checked above
  }
  return node
}

function contains(needle: string): Test {
  return (value) => {
    if (Array.isArray(value)) return value.includes(needle)
    // A space-separated claim such as `scope`: one of its words.
    return typeof value === 'string' && value.split(/\s+/).includes(needle)
  }
}

function compileCondition(c: ClaimCondition): CompiledCondition {
  const path = pointerTokens(c.claim)
  let test: Test
  let op: string
  // Values compare with ===: a number never matches a string, true never matches "true".
  if (c.equals !== undefined) {
    const expected = c.equals
    test = (v) => v === expected
    op = 'equals'
  } else if (c.oneOf !== undefined) {
    const options = c.oneOf
    test = (v) => options.some((o) => o === v)
    op = 'oneOf'
  } else if (c.contains !== undefined) {
    test = contains(c.contains)
    op = 'contains'
  } else if (c.matches !== undefined) {
    const glob = c.matches
    test = (v) => typeof v === 'string' && globMatches(glob, v)
    op = 'matches'
  } else {
    const wanted = c.exists !== false
    test = (v) => (v !== undefined) === wanted
    op = wanted ? 'exists' : 'exists false'
  }
  return { path, test, describe: `${c.claim} ${op}`, message: c.message }
}

const compiled = new WeakMap<SignerRecord, CompiledRules>()

/** Parses a signer's stored rules (already validated) once: records are replaced, not mutated. */
export function compileRules(signer: SignerRecord): CompiledRules {
  let rules = compiled.get(signer)
  if (rules) return rules
  const r: TokenRules = signer.tokenRules ?? {}
  rules = {
    audience: r.audiences?.length ? [signer.audience, ...r.audiences] : signer.audience,
    clockSkewMs: durationMs(r.clockSkew),
    maxLifetimeMs: durationMs(r.maxTokenLifetime),
    maxAgeMs: durationMs(r.maxTokenAge),
    sessionEndsWithToken: r.sessionEndsWithToken === true,
    conditions: (r.claims ?? []).map(compileCondition),
  }
  compiled.set(signer, rules)
  return rules
}

/** The moment (ms) from which `maxTokenAge` counts: `auth_time` when present, else `iat`. */
function ageStart(claims: JWTPayload): number | undefined {
  const t = typeof claims.auth_time === 'number' ? claims.auth_time : claims.iat
  return typeof t === 'number' ? t * 1000 : undefined
}

/**
 * Checks verified claims against a signer's claim conditions and token age and lifetime caps.
 * Returns the first rule broken, or undefined. `skewMs` is the tolerance in force for the signer.
 */
export function breakRules(
  rules: CompiledRules,
  claims: JWTPayload,
  nowMs: number,
  skewMs: number,
): RuleRefusal | undefined {
  if (rules.maxLifetimeMs !== undefined) {
    const rule = 'tokenRules.maxTokenLifetime'
    if (typeof claims.iat !== 'number')
      return { kind: 'token_lifetime', rule, reason: 'token has no iat claim' }
    if (((claims.exp as number) - claims.iat) * 1000 > rules.maxLifetimeMs)
      // exp is required
      return { kind: 'token_lifetime', rule, reason: 'exp - iat exceeds maxTokenLifetime' }
  }
  if (rules.maxAgeMs !== undefined) {
    const rule = 'tokenRules.maxTokenAge'
    const start = ageStart(claims)
    if (start === undefined) return { kind: 'token_age', rule, reason: 'token has no iat claim' }
    // Authenticated in the future: such a token would never grow old.
    if (start > nowMs + skewMs)
      return { kind: 'token_age', rule, reason: 'auth_time is in the future' }
    if (nowMs - start > rules.maxAgeMs + skewMs)
      return { kind: 'token_age', rule, reason: 'token is older than maxTokenAge' }
  }
  for (const [i, c] of rules.conditions.entries()) {
    if (!c.test(resolve(claims, c.path))) {
      return {
        kind: 'claim_condition',
        rule: `tokenRules.claims[${i}]`,
        reason: `claim condition ${c.describe} not met`,
        message: c.message,
      }
    }
  }
  return undefined
}

/**
 * Until when (ms) a verification may be reused without looking at the clock again: the token's
 * expiry, or sooner when `maxTokenAge` would refuse it first.
 */
export function reusableUntil(rules: CompiledRules, claims: JWTPayload, skewMs: number): number {
  const expiry = (claims.exp as number) * 1000 + skewMs // exp is required
  const start = ageStart(claims)
  if (rules.maxAgeMs === undefined || start === undefined) return expiry
  return Math.min(expiry, start + rules.maxAgeMs + skewMs + 1)
}

/** Stored durations were validated on write. */
function durationMs(text: string | undefined): number | undefined {
  return text === undefined ? undefined : parseDuration(text, { goLimit: false })
}
