import { errors, type JWTPayload } from 'jose'
import { controlCharAt, hasLoneSurrogate } from '../control-chars.js'
import type { SignerRecord } from '../store/contract.js'
import { type CompactJws, splitJws, unverifiedClaims, verifyJwt } from './jws.js'
import type { SignerEntry, SignerKeys } from './signer-keys.js'
import { breakRules, compileRules, reusableUntil } from './token-rules.js'

/** The algorithms this service accepts; jose also checks that each fits the key's type. */
export const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
]

export const MAX_TOKEN_BYTES = 8192

/** How a failure is reported to the client: RFC 6750-style error of the challenge. */
export type ChallengeError = 'missing' | 'invalid' | 'expired'

/** Why a token was refused, as a stable label (metrics, tools); `missing` when there was none. */
export const REFUSAL_KINDS = [
  'missing',
  'malformed',
  'unknown_issuer',
  'unknown_kid',
  'bad_signature',
  'expired',
  'audience',
  'claim_condition',
  'token_lifetime',
  'token_age',
  'no_identity',
  'identity_disabled',
  'policy',
] as const

export type RefusalKind = (typeof REFUSAL_KINDS)[number]

/**
 * A refused token: `error` goes to the client, `kind` labels it, `reason` says precisely why (for
 * logs only). The client's error follows the kind (`expired`, `missing`, else `invalid`) unless given.
 */
export class JwtRejected extends Error {
  override name = 'JwtRejected'
  readonly error: ChallengeError
  /** The identity the token named, when the refusal came after it was found. */
  readonly identityId: string | undefined
  /** The signer's token rule broken (`tokenRules.claims[2]`) and its operator note, if any. */
  readonly rule: { path: string; message: string | undefined } | undefined
  constructor(
    readonly kind: RefusalKind,
    readonly reason: string,
    readonly signerId?: string,
    readonly kid?: string,
    extra: {
      identityId?: string
      error?: ChallengeError
      rule?: { path: string; message: string | undefined }
    } = {},
  ) {
    super(reason)
    this.identityId = extra.identityId
    this.rule = extra.rule
    this.error = extra.error ?? (kind === 'expired' || kind === 'missing' ? kind : 'invalid')
  }
}

export interface VerifiedJwt {
  signer: SignerRecord
  claims: JWTPayload
  kid: string
  /**
   * Until when (ms) this verification may be reused, with the tolerance this check used (the
   * signer's `clockSkew`, else the controller's): exp, or sooner under `maxTokenAge` or when a
   * certificate signer's certificate ends, when a fresh check would refuse the token.
   */
  reusableUntilMs: number
}

export interface VerifyOptions {
  clock: () => Date
  clockToleranceMs: number
}

/** Maps jose's errors to refusal kinds and log reasons, in one place. */
function rejection(err: unknown, signerId: string, kid: string): JwtRejected {
  if (err instanceof JwtRejected) return err
  const reject = (kind: RefusalKind, reason: string, error?: ChallengeError) =>
    new JwtRejected(kind, reason, signerId, kid, error ? { error } : {})
  if (err instanceof errors.JWTExpired) return reject('expired', 'token expired')
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'out_of_range') return reject('malformed', `${err.claim} out of range`)
    if (err.claim === 'aud') return reject('audience', 'audience mismatch')
    if (err.claim === 'iss') return reject('unknown_issuer', 'issuer mismatch')
    // Outside its time window like an expired token, but a new token would not help yet.
    if (err.claim === 'nbf') return reject('expired', 'token not yet valid (nbf)', 'invalid')
    if (err.claim === 'exp' && err.reason === 'missing')
      return reject('malformed', 'token has no exp claim')
    if (err.claim === 'iat' && err.reason === 'check_failed')
      return reject('malformed', 'token issued in the future (iat)')
    return reject('malformed', `claim ${err.claim} ${err.reason}`)
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return reject('bad_signature', 'signature does not verify')
  if (err instanceof errors.JOSEAlgNotAllowed)
    return reject('bad_signature', 'algorithm not allowed')
  if (err instanceof errors.JOSENotSupported)
    return reject('malformed', 'unsupported algorithm or crit header')
  if (err instanceof errors.JWKSNoMatchingKey)
    return reject('unknown_kid', 'kid not found in the signer JWKS')
  if (err instanceof errors.JWKSMultipleMatchingKeys)
    return reject('unknown_kid', 'several JWKS keys match the kid')
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid)
    return reject('malformed', 'malformed token')
  if (err instanceof TypeError) return reject('bad_signature', 'algorithm does not fit the key')
  return reject(
    'bad_signature',
    `verification failed: ${err instanceof Error ? err.name : 'unknown error'}`,
  )
}

/** Whether a string has the shape of a compact JWS (three base64url parts, the last maybe empty). */
export function isCompactJws(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)
}

/**
 * How far ahead `nbf` and `iat` may lie with no tolerance set: claims are whole seconds, so a token
 * just issued by a provider whose clock runs even milliseconds ahead names a second this clock has
 * not reached, and would be refused at once now and then. Accepting it early extends no token's life
 * (`exp` has no such allowance).
 */
const NOT_YET_VALID_S = 5

function inValidity(signer: SignerRecord, now: number, toleranceMs: number): boolean {
  if (signer.notBefore === null || signer.notAfter === null) return true
  return (
    Date.parse(signer.notBefore) - toleranceMs <= now &&
    now <= Date.parse(signer.notAfter) + toleranceMs
  )
}

/**
 * Verifies an external JWT against the enabled signer whose issuer equals its `iss`: kid, allowed
 * algorithm, signature, audience, required `exp`, `nbf`, and a certificate signer's validity window.
 * Throws JwtRejected saying why not. `expectedSignerId` pins the signer (secondary factor).
 */
export async function verifyExternalJwt(
  token: string,
  keys: SignerKeys,
  options: VerifyOptions,
  expectedSignerId?: string,
): Promise<VerifiedJwt> {
  if (token.length > MAX_TOKEN_BYTES) throw new JwtRejected('malformed', 'token longer than 8 KiB')
  // Read once: the header and the (unverified) issuer here, the same header for the verification.
  let jws: CompactJws
  let iss: unknown
  try {
    jws = splitJws(token) // checks the shape: three parts of base64url text
    iss = unverifiedClaims(jws).iss
  } catch {
    // The shape is read again only to say why: any token not of it fails above.
    const reason = isCompactJws(token) ? 'malformed token' : 'not a compact JWS'
    throw new JwtRejected('malformed', reason)
  }
  const { kid } = jws.header
  if (typeof iss !== 'string') throw new JwtRejected('malformed', 'token has no iss claim')
  // No signer's issuer holds a control character or a lone surrogate (requests refuse them): such
  // an iss names no signer, and is not looked up (PostgreSQL refuses to compare a NUL, and would
  // answer a lookup of this issuer, while changes may have been missed, with an error).
  const entry: SignerEntry | undefined =
    controlCharAt(iss, '') >= 0 || hasLoneSurrogate(iss) ? undefined : await keys.resolve(iss)
  if (!entry?.signer.enabled)
    throw new JwtRejected('unknown_issuer', 'no enabled signer has this issuer')
  const { signer } = entry
  if (expectedSignerId !== undefined && signer.id !== expectedSignerId) {
    throw new JwtRejected(
      'policy',
      'token is from another signer than the policy requires',
      signer.id,
    )
  }
  if (typeof kid !== 'string' || kid === '') {
    throw new JwtRejected('malformed', 'token header has no kid', signer.id)
  }
  if (entry.certKey && kid !== signer.kid)
    throw new JwtRejected('unknown_kid', 'kid does not match the signer', signer.id, kid)
  const now = options.clock()
  const rules = compileRules(signer)
  const toleranceMs = rules.clockSkewMs ?? options.clockToleranceMs
  if (!inValidity(signer, now.getTime(), toleranceMs)) {
    throw new JwtRejected(
      'unknown_kid',
      'signer certificate is outside its validity window',
      signer.id,
      kid,
    )
  }
  try {
    const verifyOptions = {
      algorithms: ALGORITHMS,
      issuer: signer.issuer,
      audience: rules.audience,
      requiredClaims: ['exp'],
      clockTolerance: toleranceMs / 1000,
      notYetValidTolerance: NOT_YET_VALID_S,
      currentDate: now,
    }
    const { certKey, keySet } = entry
    let payload: JWTPayload
    if (certKey) payload = await verifyJwt(jws, () => certKey, verifyOptions)
    else if (keySet) {
      payload = await verifyJwt(jws, (header, input) => keySet.getKey(header, input), verifyOptions)
    } else throw new JwtRejected('unknown_kid', 'signer has no key material', signer.id, kid)
    const broken = breakRules(rules, payload, now.getTime(), toleranceMs)
    if (broken) {
      const rule = { path: broken.rule, message: broken.message }
      throw new JwtRejected(broken.kind, broken.reason, signer.id, kid, { rule })
    }
    const certificateEndsMs =
      signer.notAfter === null
        ? Number.POSITIVE_INFINITY
        : Date.parse(signer.notAfter) + toleranceMs
    const reusableUntilMs = Math.min(reusableUntil(rules, payload, toleranceMs), certificateEndsMs)
    return { signer, claims: payload, kid, reusableUntilMs }
  } catch (err) {
    throw rejection(err, signer.id, kid)
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object'

/** Reads the claim a signer matches identities by: a claim name, or a JSON pointer (`/a/b`). */
export function claimValue(claims: JWTPayload, property: string): unknown {
  if (!property.startsWith('/')) return claims[property]
  let node: unknown = claims
  for (const raw of property.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined
    node = node[key]
  }
  return node
}
