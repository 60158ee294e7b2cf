import { constants, KeyObject, type webcrypto } from 'node:crypto'
import {
  type CompactJWSHeaderParameters,
  errors,
  type FlattenedJWSInput,
  type JWTPayload,
} from 'jose'
import { rsaExponentRefusal } from './key-strength.js'
import { type AlgorithmOptions, signatureThreads } from './signature-threads.js'

/**
 * Compact JWT verification with node:crypto's one-shot `verify`, run on threads of its own in
 * batches (signature-threads.ts); WebCrypto's `subtle.verify`, which jose uses, costs the event loop
 * about 20 µs a check before its job even starts. Everything else stays jose's: key selection from
 * a JWKS (its local key set), and the claim checks of `jwtVerify` (its claims-set validation), run
 * by `validateClaims` on the claims set read once. Refusals are jose's error classes, so callers
 * tell them apart exactly as they did with `jwtVerify`.
 */

interface AlgSpec {
  /** Digest for node:crypto (`null` for EdDSA, whose hash is fixed by the curve). */
  hash: string | null
  keyTypes: string[]
  padding?: number
  saltLength?: number
  /** EC keys: the curve, and the raw r||s signature length the alg implies. */
  curve?: string
  signatureBytes?: number
}

const PKCS1 = constants.RSA_PKCS1_PADDING
const PSS = constants.RSA_PKCS1_PSS_PADDING

/** RFC 7518 section 3: each JWS algorithm this service accepts, with the key it needs. */
const SPECS: Record<string, AlgSpec> = {
  RS256: { hash: 'sha256', keyTypes: ['rsa'], padding: PKCS1 },
  RS384: { hash: 'sha384', keyTypes: ['rsa'], padding: PKCS1 },
  RS512: { hash: 'sha512', keyTypes: ['rsa'], padding: PKCS1 },
  // PSS with a salt as long as the digest (section 3.5), as WebCrypto verifies it.
  PS256: { hash: 'sha256', keyTypes: ['rsa', 'rsa-pss'], padding: PSS, saltLength: 32 },
  PS384: { hash: 'sha384', keyTypes: ['rsa', 'rsa-pss'], padding: PSS, saltLength: 48 },
  PS512: { hash: 'sha512', keyTypes: ['rsa', 'rsa-pss'], padding: PSS, saltLength: 64 },
  ES256: { hash: 'sha256', keyTypes: ['ec'], curve: 'prime256v1', signatureBytes: 64 },
  ES384: { hash: 'sha384', keyTypes: ['ec'], curve: 'secp384r1', signatureBytes: 96 },
  ES512: { hash: 'sha512', keyTypes: ['ec'], curve: 'secp521r1', signatureBytes: 132 },
  EdDSA: { hash: null, keyTypes: ['ed25519', 'ed448'] },
}

/** Each algorithm's options for `verify` (besides the key), made once. */
const VERIFY_OPTIONS = new Map<string, AlgorithmOptions>(
  Object.entries(SPECS).map(([alg, spec]) => {
    const options: AlgorithmOptions = {}
    if (spec.padding !== undefined) options.padding = spec.padding
    if (spec.saltLength !== undefined) options.saltLength = spec.saltLength
    if (spec.signatureBytes !== undefined) options.dsaEncoding = 'ieee-p1363'
    return [alg, options]
  }),
)

type CryptoKey = webcrypto.CryptoKey

/** A key a key resolver may give (jose's local JWKS gives CryptoKeys). */
type ResolvedKey = KeyObject | CryptoKey | Uint8Array | object

export type GetKey = (
  header: CompactJWSHeaderParameters,
  input: FlattenedJWSInput,
) => Promise<ResolvedKey> | ResolvedKey

export interface ClaimOptions {
  algorithms: string[]
  issuer: string
  /** Accepted when `aud` contains any of these. */
  audience: string | string[]
  requiredClaims: string[]
  /** Seconds `exp` may have passed (0: refused from the second it names). */
  clockTolerance: number
  /**
   * Seconds `nbf` and `iat` may lie ahead, at least `clockTolerance`: a token a provider has just
   * issued names the provider's second, which may be ahead of this clock's by a fraction.
   */
  notYetValidTolerance: number
  currentDate: Date
}

// The same CryptoKey objects come back from a key set until it is refetched.
const converted = new WeakMap<object, KeyObject>()

function keyObject(key: ResolvedKey): KeyObject {
  if (key instanceof KeyObject) return key
  let known = converted.get(key)
  if (!known) {
    try {
      known = KeyObject.from(key as CryptoKey) // anything else throws, and is refused below
    } catch {
      throw new TypeError('key must be a public key')
    }
    converted.set(key, known)
  }
  return known
}

/** Throws TypeError when the key cannot be the key of `alg` (jose's checkKeyType, for KeyObjects). */
function checkKey(alg: string, spec: AlgSpec, key: KeyObject): void {
  const type = key.asymmetricKeyType
  if (key.type !== 'public' || type === undefined || !spec.keyTypes.includes(type)) {
    throw new TypeError(`${alg} needs a ${spec.keyTypes.join(' or ')} public key`)
  }
  const details = key.asymmetricKeyDetails
  if (spec.padding !== undefined && (details?.modulusLength ?? 0) < 2048) {
    throw new TypeError(`${alg} needs an RSA modulus of at least 2048 bits`)
  }
  // Key sets drop weak keys when fetched; this keeps any other path from verifying with one.
  const weak = spec.padding === undefined ? undefined : rsaExponentRefusal(details?.publicExponent)
  if (weak) throw new TypeError(weak)
  if (spec.curve !== undefined && details?.namedCurve !== spec.curve) {
    throw new TypeError(`${alg} needs a key on ${spec.curve}`)
  }
}

// jose's reading of a JSON part: UTF-8 that is not well formed is refused, not replaced.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * A base64url part of a compact JWS (base64url text, checked by the caller) as JSON, read as
 * strictly as jose reads it: a length one past a whole group of four is not base64 (Node's decoder
 * would drop that character), and the bytes must be UTF-8. Throws on anything else.
 */
function jsonPart(encoded: string): unknown {
  if (encoded.length % 4 === 1) throw new TypeError('not base64url')
  return JSON.parse(strictUtf8.decode(Buffer.from(encoded, 'base64url')))
}

/** What jose takes for a JSON object: a parsed object, not an array or null. */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

function header(encoded: string): CompactJWSHeaderParameters {
  let parsed: unknown
  try {
    parsed = jsonPart(encoded)
  } catch {
    throw new errors.JWSInvalid('JWS Protected Header is invalid')
  }
  if (!isJsonObject(parsed)) throw new errors.JWSInvalid('JWS Protected Header is invalid')
  return parsed as CompactJWSHeaderParameters // a JSON object; its members are checked below
}

const BASE64URL = /^[\w-]*$/

/** A compact JWS split into its three parts, its protected header read (see `splitJws`). */
export interface CompactJws {
  encodedHeader: string
  payload: string
  signature: string
  header: CompactJWSHeaderParameters
}

/**
 * Where a JWS keeps the claims set `unverifiedClaims` read of it, with the payload it read it
 * from: the verification reuses it only while that is still the payload it checks the signature
 * of. A member of the JWS, not a WeakMap entry: a WeakMap entry for every login's short-lived JWS
 * costs the young generation's collections more than the second reading it saves.
 */
const READ = Symbol('claims read')

interface ReadJws extends CompactJws {
  [READ]: { payload: string; claims: JWTPayload } | undefined
}

/**
 * Splits a compact JWS and reads its protected header (a JSON object), once for every use: the
 * header names the key, and `verifyJwt` takes the result instead of the token. Throws JWSInvalid.
 *
 * Speed path: a login read the token four times (jose's `decodeJwt` and `decodeProtectedHeader`
 * before the check, this header and jose's claims after it), jose's base64url decoder a loop over
 * `atob`'s characters on Node 20. Read once here with Node's decoder, RS256 logins of distinct
 * tokens went 1.06 to 1.07 times as fast (paired turns as `npm run bench`, a Xeon VM).
 */
export function splitJws(token: string): CompactJws {
  const parts = token.split('.')
  // base64url text only: Node's decoders (and latin1, for the signed input) read only the low byte
  // of a wider character, so a U+0165 would pass for an "e" that jose refuses.
  // Nor a length one past a whole group of four, in any part: not base64, and Node's decoder would
  // drop that character (jose refuses it). Checked here for the signature, whose bytes no JSON
  // reading sees: an ES384, ES512 or RSA-3072 signature is a whole number of groups, and one more
  // character would make another string of a token already verified.
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part) && part.length % 4 !== 1)) {
    throw new errors.JWSInvalid('Invalid Compact JWS')
  }
  const [encodedHeader, payload, signature] = parts as [string, string, string]
  const jws: ReadJws = {
    encodedHeader,
    payload,
    signature,
    header: header(encodedHeader),
    [READ]: undefined,
  }
  return jws
}

/**
 * The claims set of a JWS, NOT verified: what picks the signer (`iss`) before any check. Read as
 * jose's `decodeJwt` reads it. The very object is what `verifyJwt` checks and returns once the
 * signature verifies (the payload is not read twice): read it, never change it. Throws JWTInvalid.
 */
export function unverifiedClaims(jws: CompactJws): Readonly<JWTPayload> {
  let parsed: unknown
  try {
    parsed = jsonPart(jws.payload)
  } catch {
    throw new errors.JWTInvalid('Failed to parse the decoded payload as JSON')
  }
  if (!isJsonObject(parsed)) throw new errors.JWTInvalid('Invalid JWT Claims Set')
  const read = jws as ReadJws
  read[READ] = { payload: jws.payload, claims: parsed }
  return parsed
}

/**
 * Verifies a compact JWT as `jwtVerify(token, getKey, options)` would: protected header (no `crit`
 * extension is supported), allowed algorithm, key resolution and fit, signature, then the claims.
 * Throws jose's errors (JWSInvalid, JOSENotSupported, JOSEAlgNotAllowed, JWKSNoMatchingKey,
 * JWSSignatureVerificationFailed, JWTExpired, JWTClaimValidationFailed, JWTInvalid) or TypeError.
 */
export async function verifyJwt(
  /** The token, or what `splitJws` read of it. */
  token: string | CompactJws,
  getKey: GetKey,
  options: ClaimOptions,
): Promise<JWTPayload> {
  const jws = typeof token === 'string' ? splitJws(token) : token
  const { encodedHeader, payload, signature: encodedSignature, header: protectedHeader } = jws
  if (protectedHeader.crit !== undefined) {
    throw new errors.JOSENotSupported('no "crit" header parameter is supported')
  }
  const { alg } = protectedHeader
  if (typeof alg !== 'string' || alg === '') {
    throw new errors.JWSInvalid('JWS "alg" (Algorithm) Header Parameter missing or invalid')
  }
  const spec = SPECS[alg]
  if (!spec || !options.algorithms.includes(alg)) {
    throw new errors.JOSEAlgNotAllowed('"alg" (Algorithm) Header Parameter value not allowed')
  }
  const key = keyObject(
    await getKey(protectedHeader, {
      protected: encodedHeader,
      payload,
      signature: encodedSignature,
    }),
  )
  checkKey(alg, spec, key)
  const valid = await signatureThreads.check({
    hash: spec.hash,
    options: VERIFY_OPTIONS.get(alg) ?? {}, // every alg of SPECS has its options
    bytes: spec.signatureBytes ?? -1,
    input: `${encodedHeader}.${payload}`,
    key,
    signature: encodedSignature,
  })
  if (!valid) {
    throw new errors.JWSSignatureVerificationFailed()
  }
  // The payload whose signature was just checked, read once: before the check (to pick the signer)
  // or now, with jose's refusal of a claims set that is not a JSON object.
  const read = (jws as Partial<ReadJws>)[READ]
  let claims = read?.payload === payload ? read.claims : undefined
  if (claims === undefined) {
    let parsed: unknown
    try {
      parsed = jsonPart(payload)
    } catch {
      parsed = undefined
    }
    if (!isJsonObject(parsed)) {
      throw new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object')
    }
    claims = parsed
  }
  validateClaims(claims, {
    issuer: options.issuer,
    audience: options.audience,
    requiredClaims: options.requiredClaims,
    // jose applies one tolerance to exp and nbf: the wider here, and exp's own in checkTimes.
    clockTolerance: Math.max(options.clockTolerance, options.notYetValidTolerance),
    currentDate: options.currentDate,
  })
  checkTimes(claims, options)
  return claims
}

/** What `validateClaims` checks a claims set against. */
export type ClaimsSetOptions = Pick<
  ClaimOptions,
  'issuer' | 'audience' | 'requiredClaims' | 'clockTolerance' | 'currentDate'
>

function missing(claims: JWTPayload, claim: string): never {
  throw new errors.JWTClaimValidationFailed(
    `missing required "${claim}" claim`,
    claims,
    claim,
    'missing',
  )
}

function unexpected(claims: JWTPayload, claim: string): never {
  throw new errors.JWTClaimValidationFailed(
    `unexpected "${claim}" claim value`,
    claims,
    claim,
    'check_failed',
  )
}

/** A time claim's value when it has one; anything but a number is refused, as jose refuses it. */
function numericDate(claims: JWTPayload, claim: 'iat' | 'nbf' | 'exp'): number | undefined {
  const value = claims[claim]
  if (value === undefined || typeof value === 'number') return value
  throw new errors.JWTClaimValidationFailed(
    `"${claim}" claim must be a number`,
    claims,
    claim,
    'invalid',
  )
}

/**
 * jose's claims-set validation (`validateClaimsSet` of jose 6, which `jwtVerify` and
 * `UnsecuredJWT.decode` apply) for the options a signer gives, on claims already read: the same
 * checks in the same order, with the same errors (class, message, claim and reason). jose offers it
 * only behind a second decoding of the payload (3.7 to 4.5 µs a call, a loop over `atob`'s
 * characters): reading the claims once, a login cost the controller 0.93 to 0.96 of its CPU
 * (`node dist/bench/ab.js`). test/jwt/jws.test.ts holds it to jose's on generated claims sets.
 */
export function validateClaims(claims: JWTPayload, options: ClaimsSetOptions): JWTPayload {
  const { issuer, audience, requiredClaims } = options
  if (!Object.hasOwn(claims, 'iss')) missing(claims, 'iss')
  if (!Object.hasOwn(claims, 'aud')) missing(claims, 'aud')
  for (let i = requiredClaims.length - 1; i >= 0; i--) {
    const claim = requiredClaims[i] as string
    if (!Object.hasOwn(claims, claim)) missing(claims, claim)
  }
  if (claims.iss !== issuer) unexpected(claims, 'iss')
  const aud = claims.aud
  const accepted = typeof audience === 'string' ? [audience] : audience
  const known =
    typeof aud === 'string'
      ? accepted.includes(aud)
      : Array.isArray(aud) && accepted.some((a) => aud.includes(a))
  if (!known) unexpected(claims, 'aud')
  const tolerance = options.clockTolerance
  if (!(Number.isFinite(tolerance) && tolerance >= 0)) {
    throw new TypeError('Invalid clockTolerance option input')
  }
  const now = Math.floor(options.currentDate.getTime() / 1000)
  if (!Number.isFinite(now)) throw new TypeError('Invalid currentDate option input')
  numericDate(claims, 'iat')
  const nbf = numericDate(claims, 'nbf')
  if (nbf !== undefined && nbf > now + tolerance) {
    throw new errors.JWTClaimValidationFailed(
      '"nbf" claim timestamp check failed',
      claims,
      'nbf',
      'check_failed',
    )
  }
  const exp = numericDate(claims, 'exp')
  if (exp !== undefined && exp <= now - tolerance) {
    throw new errors.JWTExpired('"exp" claim timestamp check failed', claims, 'exp', 'check_failed')
  }
  return claims
}

/**
 * The latest moment a time claim may name: the end of year 9999 (RFC 3339's four-digit years).
 * JSON reads `1e400` as Infinity and jose checks only that a time claim is a number, so without this
 * a token could claim never to expire, and its session's end could not be written as a date.
 */
export const LATEST_TIME_CLAIM = 253_402_300_799

/**
 * Time claims (and a numeric OpenID `auth_time`) are finite and at most `LATEST_TIME_CLAIM`. jose checks `iat` only against a maximum
 * token age; a token issued in the future (beyond the clock tolerance) comes from a signer with a
 * broken clock or was made to outlive its `exp` checks.
 */
function checkTimes(claims: JWTPayload, options: ClaimOptions): void {
  for (const claim of ['exp', 'nbf', 'iat', 'auth_time'] as const) {
    const value = claims[claim]
    // A non-numeric auth_time is not a time (token rules then count from iat).
    if (claim === 'auth_time' && typeof value !== 'number') continue
    if (value !== undefined && !(Math.abs(value as number) <= LATEST_TIME_CLAIM)) {
      throw new errors.JWTClaimValidationFailed(
        `"${claim}" claim timestamp out of range`,
        claims,
        claim,
        'out_of_range',
      )
    }
  }
  const now = Math.floor(options.currentDate.getTime() / 1000)
  // As jose's own check, with exp's tolerance (jose was given the wider one of nbf).
  if (typeof claims.exp === 'number' && claims.exp <= now - options.clockTolerance) {
    throw new errors.JWTExpired('"exp" claim timestamp check failed', claims, 'exp', 'check_failed')
  }
  if (claims.iat === undefined) return
  const ahead = Math.max(options.clockTolerance, options.notYetValidTolerance)
  if (claims.iat > now + ahead) {
    throw new errors.JWTClaimValidationFailed(
      '"iat" claim timestamp check failed (in the future)',
      claims,
      'iat',
      'check_failed',
    )
  }
}
