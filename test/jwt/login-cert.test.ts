import { generateKeyPairSync, webcrypto } from 'node:crypto'
import { Writable } from 'node:stream'
import { exportJWK } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt, signRs256Raw, unsignedJwt } from '../helpers/jwt.js'

const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
const ISSUER = 'https://idp.corp.example'
const NOW = new Date('2026-11-22T08:00:00.000Z')

let rsa: TestCert
let ec: TestCert
let ed: TestCert
let other: TestCert
let expired: TestCert
beforeAll(async () => {
  ;[rsa, ec, ed, other, expired] = await Promise.all([
    makeCert({ kind: 'RS256' }),
    makeCert({ kind: 'ES256' }),
    makeCert({ kind: 'EdDSA' }),
    makeCert({ kind: 'RS256' }),
    makeCert({
      kind: 'RS256',
      notBefore: new Date('2020-01-01'),
      notAfter: new Date('2025-01-01'),
    }),
  ])
})

/** An app with one certificate signer, an identity with externalId, and a log capture. */
async function setup(cert: TestCert = rsa, signerOver: Record<string, unknown> = {}, config = {}) {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _e, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean))
      done()
    },
  })
  const clock = testClock(NOW.toISOString())
  const app = await buildTestApp({ clock, logger: { level: 'info', stream }, config })
  const token = await login(app)
  const call = caller(app, token)
  const signer = await call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'corp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: cert.certPem,
    kid: 'corp-1',
    ...signerOver,
  })
  expect(signer.statusCode).toBe(201)
  const signerId = signer.json().data.id as string
  const identity = await call('POST', '/edge/management/v1/identities', {
    name: 'alice',
    externalId: 'alice@corp',
  })
  const identityId = identity.json().data.id as string
  const tryLogin = (jwt?: string) =>
    app.inject({
      method: 'POST',
      url: LOGIN,
      headers: jwt === undefined ? {} : { authorization: `Bearer ${jwt}` },
    })
  const reasons = () =>
    lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'ext-jwt login refused')
      .map((l) => l.reason)
  return { app, call, signerId, identityId, tryLogin, reasons, lines, clock }
}

const claims = (sub: string, over: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  aud: 'ziti',
  sub,
  ...over,
})
const sign = (
  cert: TestCert,
  c: Record<string, unknown>,
  alg = 'RS256',
  over: Record<string, unknown> = {},
) => signJwt(cert.privateKey, c, { alg, kid: 'corp-1', now: NOW, ...over })

forEachStore(() => {
  describe('JWT login with a certificate signer', () => {
    it.each([
      ['RS256', () => rsa],
      ['ES256', () => ec],
      ['EdDSA', () => ed],
    ])('logs in with %s and opens a session', async (alg, cert) => {
      const { app, tryLogin, signerId, identityId } = await setup(cert())
      const res = await tryLogin(await sign(cert(), claims(identityId), alg))
      expect(res.statusCode).toBe(200)
      const { data, meta } = res.json()
      expect(meta).toEqual({})
      expect(data).toMatchObject({
        identityId,
        authenticatorId: `extJwtId:${signerId}`,
        authQueries: [],
      })
      const token = res.headers['zt-session'] as string
      expect(data.token).toBe(token)
      const current = await app.inject({
        method: 'GET',
        url: '/edge/client/v1/current-api-session',
        headers: { 'zt-session': token },
      })
      expect(current.statusCode).toBe(200)
      expect(current.json().data.identity.name).toBe('alice')
      const end = await app.inject({
        method: 'DELETE',
        url: '/edge/client/v1/current-api-session',
        headers: { 'zt-session': token },
      })
      expect(end.statusCode).toBe(200)
      const after = await app.inject({
        method: 'GET',
        url: '/edge/client/v1/current-api-session',
        headers: { 'zt-session': token },
      })
      expect(after.statusCode).toBe(401)
    })

    it('also works on the management API path, with an optional JSON body', async () => {
      const { app, identityId, signerId } = await setup()
      const res = await app.inject({
        method: 'POST',
        url: '/edge/management/v1/authenticate?method=ext-jwt',
        headers: {
          authorization: `Bearer ${await sign(rsa, claims(identityId))}`,
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ sdkInfo: { type: 'test' }, envInfo: {} }),
      })
      expect(res.statusCode).toBe(200)
      const { data, meta } = res.json()
      expect(meta).toEqual({})
      expect(data).toMatchObject({
        identityId,
        authenticatorId: `extJwtId:${signerId}`,
        authQueries: [],
        identity: { id: identityId, name: 'alice' },
      })
      const token = res.headers['zt-session'] as string
      expect(data.token).toBe(token)
      // The session is stored: the management API serves it to its token.
      const current = await app.inject({
        method: 'GET',
        url: '/edge/management/v1/current-api-session',
        headers: { 'zt-session': token },
      })
      expect(current.statusCode).toBe(200)
      expect(current.json().data).toMatchObject({ id: data.id, identityId, token })
    })

    it('accepts typ at+jwt, an aud array, externalId and nested claims', async () => {
      const s = await setup()
      expect(
        (
          await s.tryLogin(
            await sign(rsa, claims(s.identityId), 'RS256', { header: { typ: 'at+jwt' } }),
          )
        ).statusCode,
      ).toBe(200)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { aud: ['other', 'ziti'] }))))
          .statusCode,
      ).toBe(200)
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        useExternalId: true,
        claimsProperty: '/ext/user',
      })
      expect(
        (await s.tryLogin(await sign(rsa, claims('x', { ext: { user: 'alice@corp' } }))))
          .statusCode,
      ).toBe(200)
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        claimsProperty: 'email',
      })
      expect(
        (await s.tryLogin(await sign(rsa, claims('x', { email: 'alice@corp' })))).statusCode,
      ).toBe(200)
    })

    it('refuses a token from the second its exp names by default (no leeway, as the seeds and upstream); nbf may lie 5 s ahead', async () => {
      const s = await setup()
      const t = Math.floor(NOW.getTime() / 1000)
      const expired = await s.tryLogin(await sign(rsa, claims(s.identityId, { exp: t - 1 })))
      expect(expired.statusCode).toBe(401)
      expect(expired.headers['www-authenticate']).toContain('error="expired"')
      expect((await s.tryLogin(await sign(rsa, claims(s.identityId, { exp: t })))).statusCode).toBe(
        401,
      )
      // A provider's clock a fraction of a second ahead names a second this one has not reached.
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { nbf: t + 5 })))).statusCode,
      ).toBe(200)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { nbf: t + 6 })))).statusCode,
      ).toBe(401)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { exp: t + 1, nbf: t }))))
          .statusCode,
      ).toBe(200)
    })

    it('applies CTRL_JWT_CLOCK_TOLERANCE to exp and nbf when set', async () => {
      const s = await setup(rsa, {}, { jwtClockToleranceMs: 30_000 })
      const t = Math.floor(NOW.getTime() / 1000)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { exp: t - 10 })))).statusCode,
      ).toBe(200)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { nbf: t + 10 })))).statusCode,
      ).toBe(200)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { exp: t - 40 })))).statusCode,
      ).toBe(401)
      expect(
        (await s.tryLogin(await sign(rsa, claims(s.identityId, { nbf: t + 120 })))).statusCode,
      ).toBe(401)
    })

    it('answers a missing token with error="missing" and the enabled signers in the challenge', async () => {
      const s = await setup()
      const res = await s.tryLogin()
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('UNAUTHORIZED')
      const challenge = res.headers['www-authenticate'] as string
      expect(challenge).toContain('Bearer realm="openziti-primary-ext-jwt"')
      expect(challenge).toContain('error="missing"')
      expect(challenge).toContain(`id="${s.signerId}"`)
      expect(challenge).toContain(`issuer="${ISSUER}"`)
    })

    it('refuses every hostile or mismatched token with 401 and logs the precise reason', async () => {
      const s = await setup()
      const t = Math.floor(NOW.getTime() / 1000)
      const id = s.identityId
      const hmacKey = new TextEncoder().encode(rsa.certPem)
      const attacker = generateKeyPairSync('rsa', { modulusLength: 2048 })
      const attackerJwk = await exportJWK(attacker.publicKey)
      const attackerCrypto = await webcrypto.subtle.importKey(
        'pkcs8',
        attacker.privateKey.export({ type: 'pkcs8', format: 'der' }),
        { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
        false,
        ['sign'],
      )
      const cases: [string, string, 'invalid' | 'expired'][] = [
        ['not.a.jwt!', 'not a compact JWS', 'invalid'],
        [`${'a'.repeat(9000)}.b.c`, 'token longer than 8 KiB', 'invalid'],
        [
          await sign(rsa, claims(id, { iss: 'https://unknown.example' })),
          'no enabled signer has this issuer',
          'invalid',
        ],
        [
          await sign(rsa, claims(id), 'RS256', { kid: undefined }),
          'token header has no kid',
          'invalid',
        ],
        [
          await sign(rsa, claims(id), 'RS256', { kid: 'other-kid' }),
          'kid does not match the signer',
          'invalid',
        ],
        [await sign(other, claims(id)), 'signature does not verify', 'invalid'],
        [
          unsignedJwt(claims(id, { exp: t + 60 }), { kid: 'corp-1' }),
          'algorithm not allowed',
          'invalid',
        ],
        [
          await signJwt(hmacKey, claims(id), { alg: 'HS256', kid: 'corp-1', now: NOW }),
          'algorithm not allowed',
          'invalid',
        ],
        [
          await signJwt(attackerCrypto, claims(id), {
            kid: 'corp-1',
            now: NOW,
            header: { jwk: attackerJwk },
          }),
          'signature does not verify',
          'invalid',
        ],
        [
          await signJwt(attackerCrypto, claims(id), {
            kid: 'corp-1',
            now: NOW,
            header: { jku: 'http://127.0.0.1:1/keys', x5u: 'http://127.0.0.1:1/c' },
          }),
          'signature does not verify',
          'invalid',
        ],
        [
          await signRs256Raw(
            rsa.privateKey,
            { kid: 'corp-1', crit: ['exotic'], exotic: 1 },
            claims(id, { exp: t + 60 }),
          ),
          'unsupported algorithm or crit header',
          'invalid',
        ],
        [await sign(rsa, claims(id, { aud: 'someone-else' })), 'audience mismatch', 'invalid'],
        [await sign(rsa, claims(id, { exp: undefined })), 'token has no exp claim', 'invalid'],
        [await sign(rsa, claims(id, { exp: t - 120 })), 'token expired', 'expired'],
        [await sign(rsa, claims(id, { nbf: t + 3600 })), 'token not yet valid (nbf)', 'invalid'],
        [await sign(rsa, claims('no-such-identity')), 'no identity with that id', 'invalid'],
        [
          await sign(rsa, claims(id, { sub: 42 })),
          'claim sub is not a non-empty string',
          'invalid',
        ],
        [
          await sign(rsa, claims(id, { sub: '' })),
          'claim sub is not a non-empty string',
          'invalid',
        ],
      ]
      for (const [jwt, reason, error] of cases) {
        const res = await s.tryLogin(jwt)
        expect(res.statusCode, reason).toBe(401)
        expect(res.json().error.code).toBe('UNAUTHORIZED')
        expect(res.headers['www-authenticate'], reason).toContain(`error="${error}"`)
        expect(res.body).not.toContain(reason)
        expect(s.reasons().at(-1), reason).toBe(reason)
      }
      const all = s.lines.join('\n')
      for (const [jwt] of cases) expect(all).not.toContain(jwt)
    })

    it('refuses tokens of a signer whose certificate has expired', async () => {
      const s = await setup(expired)
      const res = await s.tryLogin(await sign(expired, claims(s.identityId)))
      expect(res.statusCode).toBe(401)
      expect(s.reasons().at(-1)).toBe('signer certificate is outside its validity window')
    })

    it('refuses tokens of a signer whose certificate is not valid yet', async () => {
      const future = await makeCert({
        notBefore: new Date('2099-01-01T00:00:00Z'),
        notAfter: new Date('2100-01-01T00:00:00Z'),
      })
      const s = await setup(future)
      const res = await s.tryLogin(await sign(future, claims(s.identityId)))
      expect(res.statusCode).toBe(401)
      expect(s.reasons().at(-1)).toBe('signer certificate is outside its validity window')
    })

    it('follows identity, policy and signer changes on the very next login', async () => {
      const s = await setup()
      const jwt = await sign(rsa, claims(s.identityId))
      expect((await s.tryLogin(jwt)).statusCode).toBe(200)

      await s.call('PATCH', `/edge/management/v1/identities/${s.identityId}`, { disabled: true })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      expect(s.reasons().at(-1)).toBe('identity is disabled')
      await s.call('PATCH', `/edge/management/v1/identities/${s.identityId}`, { disabled: false })

      const otherSigner = await s.call('POST', '/edge/management/v1/external-jwt-signers', {
        name: 'other',
        enabled: true,
        issuer: 'https://other.example',
        audience: 'x',
        jwksEndpoint: 'https://other.example/jwks',
      })
      const policy = await s.call('POST', '/edge/management/v1/auth-policies', {
        name: 'only other',
        primary: {
          cert: { allowed: false },
          updb: { allowed: false },
          extJwt: { allowed: true, allowedSigners: [otherSigner.json().data.id] },
        },
        secondary: {},
      })
      await s.call('PATCH', `/edge/management/v1/identities/${s.identityId}`, {
        authPolicyId: policy.json().data.id,
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      expect(s.reasons().at(-1)).toBe('policy does not allow this signer')
      await s.call('PATCH', `/edge/management/v1/auth-policies/${policy.json().data.id}`, {
        primary: { extJwt: { allowed: false, allowedSigners: [] } },
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      expect(s.reasons().at(-1)).toBe('policy does not allow JWT login')
      await s.call('PATCH', `/edge/management/v1/identities/${s.identityId}`, {
        authPolicyId: 'default',
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(200)

      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        audience: 'new-aud',
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        audience: 'ziti',
        issuer: 'https://moved.example',
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        issuer: ISSUER,
        enabled: false,
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        enabled: true,
        certPem: other.certPem,
      })
      expect((await s.tryLogin(jwt)).statusCode).toBe(401)
      expect((await s.tryLogin(await sign(other, claims(s.identityId)))).statusCode).toBe(200)
      await s.call('DELETE', `/edge/management/v1/external-jwt-signers/${s.signerId}`)
      expect((await s.tryLogin(await sign(other, claims(s.identityId)))).statusCode).toBe(401)
    })

    it('rate-limits the authenticate routes per client address when configured', async () => {
      const s = await setup(rsa, {}, { authRateLimit: 2 })
      // The setup's admin login counted too (one limiter for both APIs): a second later it is regained.
      s.clock.advance(1000)
      const jwt = await sign(rsa, claims(s.identityId))
      expect((await s.tryLogin(jwt)).statusCode).toBe(200)
      expect((await s.tryLogin(jwt)).statusCode).toBe(200)
      const limited = await s.tryLogin(jwt)
      expect(limited.statusCode).toBe(429)
      expect(limited.json().error.code).toBe('RATE_LIMITED')
      s.clock.advance(1000)
      expect((await s.tryLogin(jwt)).statusCode).toBe(200)
    })
  })
})
