import { generateKeyPairSync, KeyObject, sign as nodeSign } from 'node:crypto'
import fc from 'fast-check'
import {
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  type JWK,
  jwtVerify,
  SignJWT,
  UnsecuredJWT,
} from 'jose'
import { describe, expect, it } from 'vitest'
import {
  type ClaimOptions,
  type ClaimsSetOptions,
  type CompactJws,
  splitJws,
  unverifiedClaims,
  validateClaims,
  verifyJwt,
} from '../../src/jwt/jws.js'
import { ALGORITHMS } from '../../src/jwt/verify.js'
import { signRs256Raw, unsignedJwt } from '../helpers/jwt.js'

const NOW = new Date('2026-06-01T12:00:00Z')
const T = Math.floor(NOW.getTime() / 1000)
const OPTIONS: ClaimOptions = {
  algorithms: ALGORITHMS,
  issuer: 'https://idp.example',
  audience: 'ziti',
  requiredClaims: ['exp'],
  clockTolerance: 30,
  notYetValidTolerance: 5,
  currentDate: NOW,
}
const CLAIMS = { iss: 'https://idp.example', aud: 'ziti', sub: 'someone', exp: T + 600, iat: T }

type Alg = (typeof ALGORITHMS)[number]
type Pair = Awaited<ReturnType<typeof generateKeyPair>>

async function keyPair(alg: Alg): Promise<Pair & { jwk: JWK }> {
  const pair = await generateKeyPair(alg === 'EdDSA' ? 'Ed25519' : alg, { extractable: true })
  return { ...pair, jwk: { ...(await exportJWK(pair.publicKey)), kid: alg, alg } }
}

function sign(pair: Pair, alg: string, claims: object = CLAIMS, header: object = {}) {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg, kid: alg, ...header })
    .sign(pair.privateKey)
}

/** The outcome of a verification: the payload, or the error's class name. */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    const payload = (await run()) as { payload?: object }
    return `ok ${JSON.stringify(payload.payload ?? payload)}`
  } catch (err) {
    return (err as Error).constructor.name
  }
}

/** Both verifiers on one token and one key resolver: they must agree. */
async function same(token: string, jwks: { keys: JWK[] }, options: Partial<ClaimOptions> = {}) {
  const o = { ...OPTIONS, ...options }
  const ours = await outcome(() => verifyJwt(token, createLocalJWKSet(jwks), o))
  const jose = await outcome(() => jwtVerify(token, createLocalJWKSet(jwks), o))
  expect(ours, token).toBe(jose)
  // As a login runs it: the claims read first (to pick the signer), then checked as read.
  let read: CompactJws | undefined
  try {
    read = splitJws(token)
    unverifiedClaims(read)
  } catch {
    read = undefined // a login refuses it before any check
  }
  if (read) {
    const jws = read
    expect(await outcome(() => verifyJwt(jws, createLocalJWKSet(jwks), o)), token).toBe(jose)
  }
  return ours
}

describe('verifyJwt (node:crypto signatures, jose claims) agrees with jose jwtVerify', () => {
  it('accepts every algorithm with its own key, and refuses it under another key', async () => {
    const pairs = new Map<Alg, Pair & { jwk: JWK }>()
    for (const alg of ALGORITHMS) pairs.set(alg as Alg, await keyPair(alg as Alg))
    const jwks = { keys: [...pairs.values()].map((p) => p.jwk) }
    for (const [alg, pair] of pairs) {
      const token = await sign(pair, alg)
      expect(await same(token, jwks), alg).toBe(`ok ${JSON.stringify(CLAIMS)}`)
      // The same kid and alg with a key of the same family that did not sign it.
      const other = await keyPair(alg)
      const forged = await sign(other, alg)
      expect(await same(forged, jwks), alg).toBe('JWSSignatureVerificationFailed')
    }
  })

  it('refuses a changed payload or signature, and a signature of the wrong length', async () => {
    const es = await keyPair('ES256')
    const rs = await keyPair('RS256')
    const jwks = { keys: [es.jwk, rs.jwk] }
    for (const [pair, alg] of [
      [es, 'ES256'],
      [rs, 'RS256'],
    ] as const) {
      const [h, p, s] = (await sign(pair, alg)).split('.') as [string, string, string]
      const otherPayload = Buffer.from(JSON.stringify({ ...CLAIMS, sub: 'admin' })).toString(
        'base64url',
      )
      expect(await same(`${h}.${otherPayload}.${s}`, jwks)).toBe('JWSSignatureVerificationFailed')
      const flipped = Buffer.from(s, 'base64url')
      flipped[5] = (flipped[5] ?? 0) ^ 1
      expect(await same(`${h}.${p}.${flipped.toString('base64url')}`, jwks)).toBe(
        'JWSSignatureVerificationFailed',
      )
      expect(await same(`${h}.${p}.${s.slice(0, -4)}`, jwks)).toBe('JWSSignatureVerificationFailed')
      expect(await same(`${h}.${p}.`, jwks)).toBe('JWSSignatureVerificationFailed')
    }
    // An ES256 signature in DER form (what OpenSSL gives by default) is not a JWS signature.
    const [h, p] = (await sign(es, 'ES256')).split('.') as [string, string]
    const der = nodeSign('sha256', Buffer.from(`${h}.${p}`), KeyObject.from(es.privateKey))
    expect(await same(`${h}.${p}.${der.toString('base64url')}`, jwks)).toBe(
      'JWSSignatureVerificationFailed',
    )
  })

  it('refuses a signature one character past a whole group of four, as jose does', async () => {
    // ES384 (96 bytes) and ES512 (132) signatures are whole groups of four characters: one more
    // would be dropped by Node's decoder and the token verify as the original.
    for (const alg of ['ES384', 'ES512'] as const) {
      const pair = await keyPair(alg)
      const jwks = { keys: [pair.jwk] }
      const token = await sign(pair, alg)
      expect((token.split('.')[2] as string).length % 4).toBe(0)
      expect(await same(token, jwks)).toBe(`ok ${JSON.stringify(CLAIMS)}`)
      for (const extra of ['A', 'Q', '_']) {
        expect(await same(`${token}${extra}`, jwks), alg).toBe('JWSInvalid')
      }
    }
  })

  it('refuses a token with a character outside base64url, even one whose low byte is one', async () => {
    const rs = await keyPair('RS256')
    const jwks = { keys: [rs.jwk] }
    const token = await sign(rs, 'RS256')
    const [header, payload, signature] = token.split('.') as [string, string, string]
    // U+0100 + c has the low byte of c: decoders that keep only that byte read the same token.
    const wide = (part: string, at: number) =>
      `${part.slice(0, at)}${String.fromCharCode(0x100 + part.charCodeAt(at))}${part.slice(at + 1)}`
    for (const forged of [
      `${wide(header, 3)}.${payload}.${signature}`,
      `${header}.${wide(payload, 5)}.${signature}`,
      `${header}.${payload}.${wide(signature, 7)}`,
      `${header}.${payload}.${signature}=`,
    ]) {
      expect(await same(forged, jwks)).toBe('JWSInvalid')
    }
    expect(await same(token, jwks)).toBe(`ok ${JSON.stringify(CLAIMS)}`)
  })

  it('reads the protected header as strictly as jose: UTF-8, whole base64 groups, an object', async () => {
    const rs = await keyPair('RS256')
    const jwks = { keys: [rs.jwk] }
    const [, payload, signature] = (await sign(rs, 'RS256')).split('.') as [string, string, string]
    const json = JSON.stringify({ alg: 'RS256', kid: 'RS256' })
    const b64 = (bytes: Buffer) => bytes.toString('base64url')
    // A string member holding the byte 0xff, which is never UTF-8.
    const notUtf8 = Buffer.concat([
      Buffer.from(`${json.slice(0, -1)},"x":"`),
      Buffer.from([0xff]),
      Buffer.from('"}'),
    ])
    // Whole base64 groups (a multiple of three bytes), then one character more.
    const whole = Buffer.from(json.padEnd(Math.ceil(json.length / 3) * 3, ' '))
    for (const header of [
      b64(notUtf8),
      `${b64(whole)}A`,
      b64(Buffer.from(`[${json}]`)),
      b64(Buffer.from('null')),
      '',
    ]) {
      expect(await same(`${header}.${payload}.${signature}`, jwks), header).toBe('JWSInvalid')
    }
  })

  it('refuses algorithms outside the list, alg none, HMAC and crit extensions', async () => {
    const rs = await keyPair('RS256')
    const jwks = { keys: [rs.jwk] }
    expect(await same(unsignedJwt(CLAIMS, { kid: 'RS256' }), jwks)).toBe('JOSEAlgNotAllowed')
    const hmac = await new SignJWT(CLAIMS)
      .setProtectedHeader({ alg: 'HS256', kid: 'RS256' })
      .sign(new TextEncoder().encode('a shared secret of some length'))
    expect(await same(hmac, jwks)).toBe('JOSEAlgNotAllowed')
    expect(await same(await sign(rs, 'RS256'), jwks, { algorithms: ['ES256'] })).toBe(
      'JOSEAlgNotAllowed',
    )
    const crit = await signRs256Raw(
      rs.privateKey as Parameters<typeof signRs256Raw>[0],
      { kid: 'RS256', crit: ['exotic'], exotic: 1 },
      CLAIMS,
    )
    expect(await same(crit, jwks)).toBe('JOSENotSupported')
  })

  it('refuses a key that does not fit the algorithm', async () => {
    // An RS256 token whose kid names an EC key: jose's key set finds no RSA key for it.
    const rs = await keyPair('RS256')
    const es = await keyPair('ES256')
    const token = await sign(rs, 'RS256', CLAIMS, { kid: 'ES256' })
    expect(await same(token, { keys: [es.jwk] })).toBe('JWKSNoMatchingKey')
    // Given keys directly (certificate signers), a misfit is a TypeError, as in jose.
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 })
    const weakToken = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(
      JSON.stringify(CLAIMS),
    ).toString('base64url')}`
    const weakSig = nodeSign('sha256', Buffer.from(weakToken), weak.privateKey)
    const full = `${weakToken}.${weakSig.toString('base64url')}`
    await expect(verifyJwt(full, () => weak.publicKey, OPTIONS)).rejects.toThrow(TypeError)
    await expect(jwtVerify(full, weak.publicKey, OPTIONS)).rejects.toThrow(TypeError)
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
    const esToken = await sign(es, 'ES256')
    await expect(verifyJwt(esToken, () => p384.publicKey, OPTIONS)).rejects.toThrow(TypeError)
    const rsaKey = KeyObject.from(rs.publicKey)
    await expect(verifyJwt(esToken, () => rsaKey, OPTIONS)).rejects.toThrow(TypeError)
    await expect(verifyJwt(esToken, () => KeyObject.from(es.privateKey), OPTIONS)).rejects.toThrow(
      TypeError,
    )
  })

  it('checks the claims exactly as jwtVerify: issuer, audience, exp, nbf, tolerance', async () => {
    const es = await keyPair('ES256')
    const jwks = { keys: [es.jwk] }
    const cases: [object, string][] = [
      [{ ...CLAIMS, iss: 'https://other.example' }, 'JWTClaimValidationFailed'],
      [{ ...CLAIMS, aud: 'other' }, 'JWTClaimValidationFailed'],
      [{ ...CLAIMS, aud: ['other', 'ziti'] }, 'ok'],
      [{ ...CLAIMS, exp: undefined }, 'JWTClaimValidationFailed'],
      [{ ...CLAIMS, exp: T - 31 }, 'JWTExpired'],
      [{ ...CLAIMS, exp: T - 29 }, 'ok'],
      [{ ...CLAIMS, nbf: T + 60 }, 'JWTClaimValidationFailed'],
      [{ ...CLAIMS, nbf: T + 20 }, 'ok'],
      [{ ...CLAIMS, exp: 'tomorrow' }, 'JWTClaimValidationFailed'],
      [{ ...CLAIMS, iat: 'now' }, 'JWTClaimValidationFailed'],
    ]
    for (const [claims, expected] of cases) {
      const result = await same(await sign(es, 'ES256', claims), jwks)
      expect(result.split(' ')[0], JSON.stringify(claims)).toBe(expected)
    }
    const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
    for (const payload of [[1, 2], 'text', null]) {
      const head = enc({ alg: 'ES256', kid: 'ES256' })
      const input = `${head}.${enc(payload)}`
      const sig = nodeSign('sha256', Buffer.from(input), {
        key: KeyObject.from(es.privateKey),
        dsaEncoding: 'ieee-p1363',
      })
      expect(await same(`${input}.${sig.toString('base64url')}`, jwks)).toBe('JWTInvalid')
    }
  })
})

/** What a claims check did: the claims it returned, or its error's class, message, claim, reason. */
function claimsOutcome(run: () => unknown): string {
  try {
    return `ok ${JSON.stringify(run())}`
  } catch (err) {
    const e = err as Error & { claim?: string; reason?: string }
    return JSON.stringify([e.constructor.name, e.message, e.claim, e.reason])
  }
}

describe('validateClaims agrees with jose on every claims set', () => {
  const NONE = Buffer.from('{"alg":"none"}').toString('base64url')
  // Values around each check's edge (now ± each tolerance, and one second either side of it), the
  // right one more often than not, then others of the same type and of other types.
  const edges = [0, 5, 30, 30.5].flatMap((t) => [-t - 1, -t, -t + 1, t - 1, t, t + 1])
  const time = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...edges.map((d) => T + d)) },
    { weight: 1, arbitrary: fc.integer({ min: T - 100, max: T + 100 }) },
    { weight: 1, arbitrary: fc.constantFrom(-1, 0, 'soon', null, true, [T], { at: T }) },
  )
  const mostly = <V>(right: V, ...others: unknown[]) =>
    fc.option(
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(right) },
        { weight: 1, arbitrary: fc.constantFrom(...others) },
      ),
      { nil: undefined, freq: 6 },
    )
  const claims = fc.record(
    {
      iss: mostly('https://idp.example', 'https://idp.example/', '', 7, null),
      aud: mostly('ziti', 'other', ['other', 'ziti'], ['other'], [], [7], 7, null, 'Ziti'),
      sub: mostly('someone', 5, null),
      exp: fc.option(time, { nil: undefined, freq: 6 }),
      nbf: fc.option(time, { nil: undefined, freq: 3 }),
      iat: fc.option(time, { nil: undefined, freq: 3 }),
      extra: fc.option(fc.jsonValue(), { nil: undefined }),
    },
    { requiredKeys: [] },
  )
  const options = fc.record({
    issuer: fc.constant('https://idp.example'),
    audience: fc.constantFrom<string | string[]>('ziti', ['other', 'ziti'], ['nobody'], []),
    // Names of Object.prototype's members too: a claim is present only as the set's own member.
    requiredClaims: fc.subarray(['exp', 'iat', 'sub', 'iss', 'nbf', 'toString', '__proto__']),
    // Now and then an option jose refuses: refused by both, and only after the same checks.
    clockTolerance: fc.oneof(
      { weight: 20, arbitrary: fc.constantFrom(0, 5, 30, 30.5) },
      { weight: 1, arbitrary: fc.constantFrom(-1, Number.NaN, Number.POSITIVE_INFINITY) },
    ),
    currentDate: fc.oneof(
      { weight: 20, arbitrary: fc.constant(NOW) },
      { weight: 1, arbitrary: fc.constant(new Date(Number.NaN)) },
    ),
  })

  it('returns the same claims or throws the same error (class, message, claim, reason)', () => {
    fc.assert(
      fc.property(claims, options, (generated, o: ClaimsSetOptions) => {
        const json = JSON.stringify(generated)
        const payload = Buffer.from(json).toString('base64url')
        const jose = claimsOutcome(() => UnsecuredJWT.decode(`${NONE}.${payload}.`, o).payload)
        const ours = claimsOutcome(() => validateClaims(JSON.parse(json), o))
        expect(ours).toBe(jose)
      }),
      { numRuns: 3000 },
    )
  })

  it('reads a claims set as jose reads it: repeated members, __proto__, numbers past the edges', () => {
    const o: ClaimsSetOptions = { ...OPTIONS, clockTolerance: 5 }
    const base = `"iss":"https://idp.example","aud":"ziti"`
    for (const json of [
      `{${base},"exp":${T - 10},"exp":${T + 600}}`,
      `{${base},"exp":${T + 600},"exp":${T - 10}}`,
      `{${base},"exp":${T + 600},"__proto__":{"exp":1}}`,
      `{"__proto__":{"iss":"https://idp.example"},"aud":"ziti","exp":${T + 600}}`,
      `{${base},"exp":1e400}`,
      `{${base},"exp":-1e400}`,
      `{${base},"exp":${T + 600},"nbf":-0}`,
      `{${base},"exp":${2 ** 60}}`,
      `{${base},"exp":${T + 600},"toString":1}`,
    ]) {
      const payload = Buffer.from(json).toString('base64url')
      const jose = claimsOutcome(() => UnsecuredJWT.decode(`${NONE}.${payload}.`, o).payload)
      expect(
        claimsOutcome(() => validateClaims(JSON.parse(json), o)),
        json,
      ).toBe(jose)
    }
  })

  it('trusts the claims read before the check only while they are of the payload checked', async () => {
    const pair = await keyPair('RS256')
    const key = KeyObject.from(pair.publicKey)
    const first = splitJws(await sign(pair, 'RS256', { ...CLAIMS, sub: 'first' }))
    const second = splitJws(await sign(pair, 'RS256', { ...CLAIMS, sub: 'second' }))
    expect(unverifiedClaims(first).sub).toBe('first')
    // The same object, given another signed payload: its own claims come back, not those read.
    first.payload = second.payload
    first.signature = second.signature
    expect((await verifyJwt(first, () => key, OPTIONS)).sub).toBe('second')
    // A copy holding another payload is read afresh too.
    const third = splitJws(await sign(pair, 'RS256', { ...CLAIMS, sub: 'third' }))
    unverifiedClaims(third)
    const copy = { ...third, payload: second.payload, signature: second.signature }
    expect((await verifyJwt(copy, () => key, OPTIONS)).sub).toBe('second')
  })

  it('refuses options jose refuses', () => {
    const valid = { ...CLAIMS }
    for (const o of [
      { clockTolerance: -1 },
      { clockTolerance: Number.NaN },
      { currentDate: new Date(Number.NaN) },
    ]) {
      const options = { ...OPTIONS, ...o }
      const payload = Buffer.from(JSON.stringify(valid)).toString('base64url')
      const jose = claimsOutcome(() => UnsecuredJWT.decode(`${NONE}.${payload}.`, options).payload)
      expect(claimsOutcome(() => validateClaims({ ...valid }, options))).toBe(jose)
      expect(jose).toMatch(/^\["TypeError"/)
    }
  })
})
