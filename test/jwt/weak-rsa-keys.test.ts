import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import { Writable } from 'node:stream'
import { exportJWK, generateKeyPair } from 'jose'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { signJwt } from '../helpers/jwt.js'

const SIGNERS = '/edge/management/v1/external-jwt-signers'
const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
const ISSUER = 'https://weak.corp.example'
const NOW = '2026-11-22T08:00:00.000Z'
// DER of DigestInfo for SHA-256 (RFC 8017 section 9.2, note 1), before the 32-byte hash.
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex')

/**
 * A public RSA key with e = 1 and a token "signed" for it without any private key: with e = 1,
 * s^e mod n = s, so the signature is the PKCS#1 v1.5 encoded hash itself (RFC 8017 section 9.2).
 */
function forgeWithExponentOne(kid: string, payload: object) {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const jwk = { ...publicKey.export({ format: 'jwk' }), e: 'AQ', kid, alg: 'RS256', use: 'sig' }
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const input = `${enc({ alg: 'RS256', kid })}.${enc(payload)}`
  const hash = createHash('sha256').update(input).digest()
  const t = Buffer.concat([SHA256_DIGEST_INFO, hash])
  const em = Buffer.concat([
    Buffer.from([0, 1]),
    Buffer.alloc(256 - t.length - 3, 0xff),
    Buffer.from([0]),
    t,
  ])
  const weakKey = createPublicKey({ key: jwk, format: 'jwk' })
  return { jwk, weakKey, input, signature: em, token: `${input}.${em.toString('base64url')}` }
}

function logCapture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _e, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l))
      done()
    },
  })
  return { lines, logger: { level: 'info', stream } }
}

/**
 * A controller (on `clock`, logging to `logger` when given) with a JWKS signer for `url`; resolves
 * with the app, its admin caller, the signer's id and a reader of its key status.
 */
async function jwksSigner(
  url: string,
  options: { clock?: ReturnType<typeof testClock>; logger?: object } = {},
) {
  const app = await buildTestApp({
    clock: options.clock ?? testClock(NOW),
    ...(options.logger ? { logger: options.logger } : {}),
  })
  const call = caller(app, await login(app))
  const created = await call('POST', SIGNERS, {
    name: 'screened',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    jwksEndpoint: url,
  })
  expect(created.statusCode).toBe(201)
  const id = created.json().data.id as string
  const keyStatus = async () => (await call('GET', `${SIGNERS}/${id}/keys`)).json().data
  return { app, call, id, keyStatus }
}

/**
 * A JWKS signer of `url`: waits until its key status keeps only the key `ok` and lists `refused`
 * (kid and reason, in the set's order) as refused.
 */
async function expectOnlyOkKept(url: string, refused: { kid: string; reason: string }[]) {
  const { keyStatus } = await jwksSigner(url)
  await vi.waitFor(async () => {
    const status = await keyStatus()
    expect(status.kids).toEqual(['ok'])
    expect(status.refusedKeys).toEqual(refused)
  })
}

describe('weak RSA keys in a JWKS (finding: RSA keys with a public exponent of 1 are accepted)', () => {
  it('refuses a token made without a private key for an e=1 JWKS key, drops the key with a warning and shows it in the key status', async () => {
    const clock = testClock(NOW)
    const now = Math.floor(clock().getTime() / 1000)
    const good = await generateKeyPair('RS256', { extractable: true })
    const goodJwk = { ...(await exportJWK(good.publicKey)), kid: 'good', alg: 'RS256' }
    const server = await startJwksServer([goodJwk])
    const log = logCapture()
    const { app, call, id: signerId } = await jwksSigner(server.url, { clock, logger: log.logger })
    const identityId = (
      await call('POST', '/edge/management/v1/identities', { name: 'bob' })
    ).json().data.id as string
    const claims = { iss: ISSUER, aud: 'ziti', sub: identityId, iat: now, exp: now + 600 }
    const forged = forgeWithExponentOne('weak', claims)
    // The forgery is a valid signature for that key: only refusing the key stops it.
    expect(verify('sha256', Buffer.from(forged.input), forged.weakKey, forged.signature)).toBe(true)
    server.setKeys([goodJwk, forged.jwk])

    const refreshed = await call('POST', `${SIGNERS}/${signerId}/refresh-keys`)
    expect(refreshed.statusCode).toBe(200)
    expect(refreshed.json().data).toMatchObject({
      source: 'jwks',
      kids: ['good'],
      lastFetchError: null,
      refusedKeys: [{ kid: 'weak', reason: expect.stringContaining('exponent 1') }],
    })
    const status = await call('GET', `${SIGNERS}/${signerId}/keys`)
    expect(status.json().data.refusedKeys).toEqual(refreshed.json().data.refusedKeys)
    expect(
      log.lines.some((l) => l.level === 40 && l.kid === 'weak' && l.signerId === signerId),
    ).toBe(true)

    const login401 = await app.inject({
      method: 'POST',
      url: LOGIN,
      headers: { authorization: `Bearer ${forged.token}` },
    })
    expect(login401.statusCode).toBe(401)
    const honest = await signJwt(good.privateKey, claims, { kid: 'good', now: clock() })
    const ok = await app.inject({
      method: 'POST',
      url: LOGIN,
      headers: { authorization: `Bearer ${honest}` },
    })
    expect(ok.statusCode).toBe(200)
  })

  it('refuses even e=3 and even exponents in a set, and keeps no key from it', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const base = publicKey.export({ format: 'jwk' })
    const server = await startJwksServer([
      { ...base, e: 'Aw', kid: 'e3' },
      { ...base, e: 'AQAC', kid: 'even' },
      { ...base, kid: 'ok' },
    ])
    const { keyStatus } = await jwksSigner(server.url)
    await vi.waitFor(async () => {
      const status = await keyStatus()
      expect(status.kids).toEqual(['ok'])
      expect(status.refusedKeys.map((k: { kid: string }) => k.kid)).toEqual(['e3', 'even'])
    })
  })

  it('refuses RSA keys under 2048 bits, without a modulus, and symmetric keys, with their reasons', async () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const base = publicKey.export({ format: 'jwk' })
    const server = await startJwksServer([
      { ...small.export({ format: 'jwk' }), kid: 'small', alg: 'RS256' },
      { kty: 'RSA', e: 'AQAB', kid: 'no-n' },
      { kty: 'oct', k: 'c2VjcmV0', kid: 'secret', alg: 'HS256' },
      { ...base, kid: 'ok' },
    ])
    await expectOnlyOkKept(server.url, [
      { kid: 'small', reason: 'the RSA key has 1024 bits; at least 2048 are needed' },
      { kid: 'no-n', reason: 'the RSA key has no valid modulus' },
      { kid: 'secret', reason: 'a symmetric (oct) key cannot verify an external JWT' },
    ])
  })
})

describe('a JWKS that would cost more than it serves', () => {
  it('refuses keys of no accepted type and RSA exponents of 2^256 or more, with their reasons', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const base = publicKey.export({ format: 'jwk' })
    // 2^256 + 1: odd, far above 65537, and past FIPS 186-5's bound.
    const huge = Buffer.from(`01${'00'.repeat(31)}01`, 'hex').toString('base64url')
    const server = await startJwksServer([
      { kid: 'typeless' },
      { kty: 'foo', kid: 'foo' },
      { ...base, e: huge, kid: 'huge-e' },
      { ...base, kid: 'ok' },
    ])
    await expectOnlyOkKept(server.url, [
      { kid: 'typeless', reason: 'not a key type of an accepted algorithm (RSA, EC or OKP)' },
      { kid: 'foo', reason: 'not a key type of an accepted algorithm (RSA, EC or OKP)' },
      { kid: 'huge-e', reason: 'the RSA public exponent is 2^256 or more' },
    ])
  })

  it('refuses a set of more than 100 keys as a failed fetch, keeping the keys it had', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const base = publicKey.export({ format: 'jwk' })
    const server = await startJwksServer([{ ...base, kid: 'ok' }])
    const { call, id, keyStatus } = await jwksSigner(server.url)
    await vi.waitFor(async () => expect((await keyStatus()).kids).toEqual(['ok']))
    server.setKeys(Array.from({ length: 101 }, (_, i) => ({ ...base, kid: `k${i}` })))
    const refreshed = await call('POST', `${SIGNERS}/${id}/refresh-keys`)
    expect(refreshed.json().data).toMatchObject({
      kids: ['ok'],
      lastFetchError: 'the JWKS holds 101 keys; at most 100 are read',
    })
    // A hundred is a set like any other.
    server.setKeys(Array.from({ length: 100 }, (_, i) => ({ ...base, kid: `k${i}` })))
    await vi.waitFor(async () => {
      const again = (await call('POST', `${SIGNERS}/${id}/refresh-keys`)).json().data
      expect(again.lastFetchError).toBeNull()
      expect(again.kids).toHaveLength(100)
    })
  })
})

let e3: TestCert
let strong: TestCert
beforeAll(async () => {
  ;[e3, strong] = await Promise.all([makeCert({ kind: 'RSA-E3' }), makeCert({ kind: 'RS256' })])
})

forEachStore(() => {
  describe('weak RSA certificates (finding: certificate signers have no exponent check)', () => {
    it('refuses an e=3 certificate signer at create, PUT and PATCH with COULD_NOT_VALIDATE on certPem', async () => {
      const app = await buildTestApp()
      const call = caller(app, await login(app))
      const body = {
        name: 'e3',
        enabled: true,
        issuer: ISSUER,
        audience: 'ziti',
        certPem: e3.certPem,
        kid: 'k',
      }
      const expectRefused = (res: Awaited<ReturnType<typeof call>>) => {
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({
          code: 'COULD_NOT_VALIDATE',
          cause: { field: 'certPem', reason: expect.stringContaining('exponent 3') },
        })
      }
      expectRefused(await call('POST', SIGNERS, body))
      const created = await call('POST', SIGNERS, { ...body, certPem: strong.certPem })
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id as string
      expectRefused(await call('PUT', `${SIGNERS}/${id}`, body))
      expectRefused(await call('PATCH', `${SIGNERS}/${id}`, { certPem: e3.certPem }))
      const stored = await call('GET', `${SIGNERS}/${id}`)
      expect(stored.json().data.certPem).toBe(strong.certPem)
      expect((await call('GET', SIGNERS)).json().meta.pagination.totalCount).toBe(1)
    })
  })
})
