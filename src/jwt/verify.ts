import {
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose'
import type { SignerRecord } from '../store/types.js'
import type { SignerEntry, SignerKeys } from './signer-keys.js'

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

/** A refused token: `error` goes to the client, `reason` only to the log. */
export class JwtRejected extends Error {
  override name = 'JwtRejected'
  constructor(
    readonly error: ChallengeError,
    readonly reason: string,
    readonly signerId?: string,
    readonly kid?: string,
  ) {
    super(reason)
  }
}

export interface VerifiedJwt {
  signer: SignerRecord
  claims: JWTPayload
  kid: string
}

export interface VerifyOptions {
  clock: () => Date
  clockToleranceMs: number
}

/** Maps jose's error codes to log reasons, in one place. */
function rejection(err: unknown, signerId: string, kid: string): JwtRejected {
  const reject = (error: ChallengeError, reason: string) =>
    new JwtRejected(error, reason, signerId, kid)
  if (err instanceof errors.JWTExpired) return reject('expired', 'token expired')
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return reject('invalid', 'audience mismatch')
    if (err.claim === 'iss') return reject('invalid', 'issuer mismatch')
    if (err.claim === 'nbf') return reject('invalid', 'token not yet valid (nbf)')
    if (err.claim === 'exp') return reject('invalid', 'token has no exp claim')
    return reject('invalid', `claim ${err.claim} ${err.reason}`)
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return reject('invalid', 'signature does not verify')
  if (err instanceof errors.JOSEAlgNotAllowed) return reject('invalid', 'algorithm not allowed')
  if (err instanceof errors.JOSENotSupported)
    return reject('invalid', 'unsupported algorithm or crit header')
  if (err instanceof errors.JWKSNoMatchingKey)
    return reject('invalid', 'kid not found in the signer JWKS')
  if (err instanceof errors.JWKSMultipleMatchingKeys)
    return reject('invalid', 'several JWKS keys match the kid')
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid)
    return reject('invalid', 'malformed token')
  if (err instanceof TypeError) return reject('invalid', 'algorithm does not fit the key')
  return reject(
    'invalid',
    `verification failed: ${err instanceof Error ? err.name : 'unknown error'}`,
  )
}

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
  if (token.length > MAX_TOKEN_BYTES) throw new JwtRejected('invalid', 'token longer than 8 KiB')
  if (!/^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)) throw new JwtRejected('invalid', 'not a compact JWS')
  let iss: unknown
  let kid: unknown
  try {
    iss = decodeJwt(token).iss
    kid = decodeProtectedHeader(token).kid
  } catch {
    throw new JwtRejected('invalid', 'malformed token')
  }
  if (typeof iss !== 'string') throw new JwtRejected('invalid', 'token has no iss claim')
  const entry: SignerEntry | undefined = await keys.resolve(iss)
  if (!entry?.signer.enabled) throw new JwtRejected('invalid', 'no enabled signer has this issuer')
  const { signer } = entry
  if (expectedSignerId !== undefined && signer.id !== expectedSignerId) {
    throw new JwtRejected(
      'invalid',
      'token is from another signer than the policy requires',
      signer.id,
    )
  }
  if (typeof kid !== 'string' || kid === '') {
    throw new JwtRejected('invalid', 'token header has no kid', signer.id)
  }
  if (entry.certKey && kid !== signer.kid)
    throw new JwtRejected('invalid', 'kid does not match the signer', signer.id, kid)
  const now = options.clock()
  if (!inValidity(signer, now.getTime(), options.clockToleranceMs)) {
    throw new JwtRejected(
      'invalid',
      'signer certificate is outside its validity window',
      signer.id,
      kid,
    )
  }
  try {
    const verifyOptions = {
      algorithms: ALGORITHMS,
      issuer: signer.issuer,
      audience: signer.audience,
      requiredClaims: ['exp'],
      clockTolerance: options.clockToleranceMs / 1000,
      currentDate: now,
    }
    const { certKey, keySet } = entry
    let payload: JWTPayload
    if (certKey) payload = (await jwtVerify(token, certKey, verifyOptions)).payload
    else if (keySet) {
      const getKey: JWTVerifyGetKey = (header, input) => keySet.getKey(header, input)
      payload = (await jwtVerify(token, getKey, verifyOptions)).payload
    } else throw new JwtRejected('invalid', 'signer has no key material', signer.id, kid)
    return { signer, claims: payload, kid }
  } catch (err) {
    throw rejection(err, signer.id, kid)
  }
}

/** Reads the claim a signer matches identities by: a claim name, or a JSON pointer (`/a/b`). */
export function claimValue(claims: JWTPayload, property: string): unknown {
  if (!property.startsWith('/')) return claims[property]
  let node: unknown = claims
  for (const raw of property.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}
