import type { LookupAddress } from 'node:dns'
import { exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { type JwksServer, startJwksServer } from '../helpers/jwks-server.js'
import { signJwt } from '../helpers/jwt.js'

const ISSUER = 'https://login.corp.example'
const NOW = '2026-11-22T08:00:00.000Z'
const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
const WAIT = { timeout: 5000, interval: 10 }

async function newKeyPair(kid: string, alg: string) {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}
type Pair = Awaited<ReturnType<typeof newKeyPair>>

// An RSA key takes 100-400 ms of CPU to generate: one per kid and algorithm for the whole file.
// Keys of different kids still differ, and every test has an app and a JWKS server of its own.
const pairs = new Map<string, Promise<Pair>>()
function keyPair(kid: string, alg = 'RS256'): Promise<Pair> {
  const key = `${kid} ${alg}`
  const pair = pairs.get(key) ?? newKeyPair(kid, alg)
  pairs.set(key, pair)
  return pair
}

async function setup(
  server: JwksServer,
  options: {
    config?: Record<string, unknown>
    timeoutMs?: number
    resolver?: (h: string) => Promise<LookupAddress[]>
  } = {},
) {
  const clock = testClock(NOW)
  const app = await buildTestApp({
    clock,
    config: { jwksCooldownMs: 5000, jwksMaxAgeMs: 600_000, ...options.config },
    ...(options.timeoutMs ? { jwksFetchTimeoutMs: options.timeoutMs } : {}),
    ...(options.resolver ? { resolver: options.resolver } : {}),
  })
  const session = await login(app)
  const call = caller(app, session)
  const signer = await call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'corp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    jwksEndpoint: server.url,
  })
  const identityId = (
    await call('POST', '/edge/management/v1/identities', { name: 'alice' })
  ).json().data.id as string
  const token = (pair: Pair, over: Record<string, unknown> = {}) =>
    signJwt(
      pair.privateKey,
      { iss: ISSUER, aud: 'ziti', sub: identityId, ...over },
      { alg: pair.alg, kid: pair.kid, now: clock() },
    )
  const tryLogin = async (jwt: string) =>
    (await app.inject({ method: 'POST', url: LOGIN, headers: { authorization: `Bearer ${jwt}` } }))
      .statusCode
  return { app, call, clock, signer, signerId: signer.json().data.id as string, token, tryLogin }
}

/** Waits until the background fetch the signer create started has landed. */
async function settle(server: JwksServer, hits = 1) {
  for (let i = 0; i < 100 && server.hits() < hits; i++) await new Promise((r) => setTimeout(r, 10))
  await new Promise((r) => setTimeout(r, 20))
}

forEachStore(() => {
  describe('JWT login with a JWKS signer', () => {
    it('fetches keys when the signer is created and logs in with RS256 and ES256 keys', async () => {
      const rs = await keyPair('rs-1')
      const es = await keyPair('es-1', 'ES256')
      const server = await startJwksServer([rs.jwk, es.jwk])
      const s = await setup(server)
      expect(s.signer.statusCode).toBe(201)
      await settle(server)
      expect(server.hits()).toBe(1)
      expect(await s.tryLogin(await s.token(rs))).toBe(200)
      expect(await s.tryLogin(await s.token(es))).toBe(200)
      expect(server.hits()).toBe(1)
    })

    it('rotates keys: a new kid works once the cooldown has passed, a removed kid fails after a refresh', async () => {
      const k1 = await keyPair('k1')
      const k2 = await keyPair('k2')
      const server = await startJwksServer([k1.jwk])
      const s = await setup(server)
      await settle(server)
      server.setKeys([k1.jwk, k2.jwk])
      // Within the cooldown of the creation fetch, an unknown kid does not refetch.
      expect(await s.tryLogin(await s.token(k2))).toBe(401)
      expect(server.hits()).toBe(1)
      s.clock.advance(5000)
      expect(await s.tryLogin(await s.token(k2))).toBe(200)
      expect(server.hits()).toBe(2)

      server.setKeys([k2.jwk])
      expect(await s.tryLogin(await s.token(k1))).toBe(200) // still cached
      s.clock.advance(600_000)
      await s.tryLogin(await s.token(k2)) // past max age: a refresh starts in the background
      await settle(server, 3)
      expect(await s.tryLogin(await s.token(k1))).toBe(401)
      expect(await s.tryLogin(await s.token(k2))).toBe(200)
    })

    it('keeps the cached keys working while the provider is down (stale-if-error)', async () => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      const s = await setup(server)
      await settle(server)
      server.respond({ status: 500, body: 'down' })
      s.clock.advance(700_000)
      expect(await s.tryLogin(await s.token(k1))).toBe(200)
      await settle(server, 2)
      expect(server.hits()).toBe(2)
      expect(await s.tryLogin(await s.token(k1))).toBe(200)
    })

    it('makes one fetch for a flood of unknown kids', async () => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      const s = await setup(server)
      await settle(server)
      s.clock.advance(5000)
      const tokens = await Promise.all(
        Array.from({ length: 50 }, (_, i) => s.token({ ...k1, kid: `bogus-${i}` })),
      )
      const codes = await Promise.all(tokens.map(s.tryLogin))
      expect(codes.every((c) => c === 401)).toBe(true)
      expect(server.hits()).toBe(2)
      const again = await Promise.all(tokens.slice(0, 10).map(s.tryLogin))
      expect(again.every((c) => c === 401)).toBe(true)
      expect(server.hits()).toBe(2)
    })

    it.each([
      ['a slow provider (timeout)', { delayMs: 1000 }],
      ['an oversized body', { body: JSON.stringify({ keys: [], pad: 'x'.repeat(1024 * 1024) }) }],
      ['a wrong content type', { type: 'text/html' }],
      ['a body that is not a JWKS', { body: '{"keys": "no"}' }],
      ['a non-200 status', { status: 404 }],
    ])('accepts no keys from %s', async (_name, response) => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      server.respond({ body: JSON.stringify({ keys: [k1.jwk] }), ...response })
      const s = await setup(server, { timeoutMs: 200 })
      // The fetch the creation started has ended (lastFetchAt is set on success and failure).
      await vi.waitFor(async () => {
        const keys = await s.call(
          'GET',
          `/edge/management/v1/external-jwt-signers/${s.signerId}/keys`,
        )
        expect(keys.json().data.lastFetchAt).not.toBeNull()
      }, WAIT)
      expect(await s.tryLogin(await s.token(k1))).toBe(401)
    })

    it('waits for at most one fetch of a provider that never answers, and refuses at once within the cooldown after it', async () => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      server.respond({ body: JSON.stringify({ keys: [k1.jwk] }), delayMs: 60_000 })
      const s = await setup(server, { timeoutMs: 300 })
      await vi.waitFor(async () => {
        const keys = await s.call(
          'GET',
          `/edge/management/v1/external-jwt-signers/${s.signerId}/keys`,
        )
        expect(keys.json().data.lastFetchError).not.toBeNull()
      }, WAIT)
      expect(server.hits()).toBe(1)
      const jwt = await s.token(k1)
      s.clock.advance(6000) // past the cooldown: this login fetches again
      // The clock moves on while that fetch hangs, past the cooldown again, as it does for a
      // provider that answers nothing within the fetch timeout (5 s, as long as the cooldown).
      server.onHit((hit) => {
        if (hit === 2) s.clock.advance(6000)
      })
      expect(await s.tryLogin(jwt)).toBe(401)
      expect(server.hits()).toBe(2) // the login that waited for a fetch did not start another
      expect(await s.tryLogin(jwt)).toBe(401) // within the cooldown of that fetch's end
      expect(server.hits()).toBe(2) // refused without a fetch to wait for
    })

    it('accepts application/jwk-set+json with parameters', async () => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      server.respond({ type: 'application/jwk-set+json; charset=utf-8' })
      const s = await setup(server)
      await settle(server)
      expect(await s.tryLogin(await s.token(k1))).toBe(200)
    })

    it('follows a redirect, and refetches at once when the endpoint changes', async () => {
      const k1 = await keyPair('k1')
      const k2 = await keyPair('k2')
      const target = await startJwksServer([k2.jwk])
      const server = await startJwksServer([k1.jwk])
      const s = await setup(server)
      await settle(server)
      expect(await s.tryLogin(await s.token(k1))).toBe(200)
      server.respond({ status: 302, location: target.url, body: '' })
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        jwksEndpoint: `${server.url}?v=2`,
      })
      await settle(target)
      expect(await s.tryLogin(await s.token(k1))).toBe(401)
      expect(await s.tryLogin(await s.token(k2))).toBe(200)
    })
  })

  describe('JWKS endpoint policy (SSRF)', () => {
    it.each([
      ['http://169.254.169.254/latest/meta-data', 'INVALID_FIELD'],
      ['http://[fe80::1]/jwks', 'INVALID_FIELD'],
      ['http://[fd00:ec2::254]/jwks', 'INVALID_FIELD'],
      ['http://224.0.0.1/jwks', 'INVALID_FIELD'],
      ['http://0.0.0.0/jwks', 'INVALID_FIELD'],
      ['http://[::ffff:169.254.169.254]/jwks', 'INVALID_FIELD'],
      ['file:///etc/passwd', 'INVALID_FIELD'],
      ['not a url', 'INVALID_FIELD'],
    ])('refuses %s at create and update', async (url, code) => {
      const app = await buildTestApp()
      const session = await login(app)
      const res = await app.inject({
        method: 'POST',
        url: '/edge/management/v1/external-jwt-signers',
        headers: { 'zt-session': session },
        payload: { name: 'x', enabled: true, issuer: 'x', audience: 'x', jwksEndpoint: url },
      })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({ code, cause: { field: 'jwksEndpoint' } })
    })

    it('refuses http and private addresses when configured to', async () => {
      const app = await buildTestApp({ config: { jwksAllowHttp: false, jwksBlockPrivate: true } })
      const session = await login(app)
      for (const url of [
        'http://idp.example/jwks',
        'https://127.0.0.1/jwks',
        'https://10.1.2.3/jwks',
        'https://[::1]/jwks',
      ]) {
        const res = await app.inject({
          method: 'POST',
          url: '/edge/management/v1/external-jwt-signers',
          headers: { 'zt-session': session },
          payload: { name: 'x', enabled: true, issuer: 'x', audience: 'x', jwksEndpoint: url },
        })
        expect(res.json().error, url).toMatchObject({
          code: 'INVALID_FIELD',
          cause: { field: 'jwksEndpoint' },
        })
      }
    })

    it('checks every address a name resolves to, at connect time, without sending a packet elsewhere', async () => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      const port = new URL(server.url).port
      const asked: string[] = []
      const resolver = async (hostname: string): Promise<LookupAddress[]> => {
        asked.push(hostname)
        if (hostname === 'metadata.test') return [{ address: '169.254.169.254', family: 4 }]
        if (hostname === 'mixed.test')
          return [
            { address: '127.0.0.1', family: 4 },
            { address: 'fe80::1', family: 6 },
          ]
        return [{ address: '127.0.0.1', family: 4 }]
      }
      const s = await setup(server, { resolver })
      await settle(server)
      for (const host of ['metadata.test', 'mixed.test']) {
        const hits = server.hits()
        await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
          jwksEndpoint: `http://${host}:${port}/jwks`,
        })
        await new Promise((r) => setTimeout(r, 100))
        expect(asked).toContain(host)
        expect(server.hits()).toBe(hits)
        expect(await s.tryLogin(await s.token(k1))).toBe(401)
      }
      // A name that resolves to an allowed address works through the same dialer.
      await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        jwksEndpoint: `http://idp.test:${port}/jwks`,
      })
      await settle(server, server.hits() + 1)
      expect(await s.tryLogin(await s.token(k1))).toBe(200)
    })

    it('re-checks redirects against the policy', async () => {
      const k1 = await keyPair('k1')
      const server = await startJwksServer([k1.jwk])
      server.respond({ status: 302, location: 'http://169.254.169.254/latest/meta-data', body: '' })
      const s = await setup(server)
      await settle(server)
      expect(await s.tryLogin(await s.token(k1))).toBe(401)
    })
  })
})
