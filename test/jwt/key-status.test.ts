import { exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { makeCert } from '../helpers/certs.js'
import { type JwksServer, startJwksServer } from '../helpers/jwks-server.js'
import { signJwt } from '../helpers/jwt.js'

const NOW = '2026-11-22T08:00:00.000Z'
const ISSUER = 'https://login.corp.example'
const PATHS = ['/edge/management/v1/external-jwt-signers', '/edge/management/v1/ext-jwt-signers']

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  }
}

/** The app on a frozen clock (cooldown 5 s, max age 10 min) with one JWKS signer. */
async function setup(server: JwksServer) {
  const clock = testClock(NOW)
  const app = await buildTestApp({
    clock,
    config: { jwksCooldownMs: 5000, jwksMaxAgeMs: 600_000 },
    jwksFetchTimeoutMs: 500,
  })
  const call = caller(app, await login(app))
  const created = await call('POST', PATHS[0] as string, {
    name: 'corp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    jwksEndpoint: server.url,
  })
  expect(created.statusCode).toBe(201)
  const signerId = created.json().data.id as string
  const identityId = (
    await call('POST', '/edge/management/v1/identities', { name: 'alice' })
  ).json().data.id as string
  const tryLogin = async (pair: Awaited<ReturnType<typeof keyPair>>) => {
    const jwt = await signJwt(
      pair.privateKey,
      { iss: ISSUER, aud: 'ziti', sub: identityId },
      { kid: pair.kid, now: clock() },
    )
    const res = await app.inject({
      method: 'POST',
      url: '/edge/client/v1/authenticate?method=ext-jwt',
      headers: { authorization: `Bearer ${jwt}` },
    })
    return res.statusCode
  }
  return { app, call, clock, signerId, tryLogin }
}

describe('signer key status and refresh', () => {
  it('shows the kids and freshness of a JWKS signer after create, on both paths', async () => {
    const [k1, k2] = await Promise.all([keyPair('k1'), keyPair('k2')])
    const server = await startJwksServer([k1.jwk, k2.jwk])
    const s = await setup(server)
    for (const path of PATHS) {
      await vi.waitFor(async () => {
        const res = await s.call('GET', `${path}/${s.signerId}/keys`)
        expect(res.statusCode).toBe(200)
        expect(res.json()).toEqual({
          data: {
            source: 'jwks',
            kids: ['k1', 'k2'],
            lastFetchAt: NOW,
            lastFetchError: null,
            nextRefreshAt: '2026-11-22T08:10:00.000Z',
          },
          meta: {},
        })
      })
    }
    expect(server.hits()).toBe(1)
  })

  it('shows a certificate signer its one kid and no fetch', async () => {
    const app = await buildTestApp()
    const call = caller(app, await login(app))
    const created = await call('POST', PATHS[1] as string, {
      name: 'cert',
      enabled: true,
      issuer: 'https://cert.example',
      audience: 'ziti',
      certPem: (await makeCert()).certPem,
      kid: 'cert-kid',
    })
    const id = created.json().data.id as string
    const expected = {
      data: {
        source: 'certificate',
        kids: ['cert-kid'],
        lastFetchAt: null,
        lastFetchError: null,
        nextRefreshAt: null,
      },
      meta: {},
    }
    for (const path of PATHS) {
      for (const [method, suffix] of [
        ['GET', 'keys'],
        ['POST', 'refresh-keys'],
      ] as const) {
        const res = await call(method, `${path}/${id}/${suffix}`)
        expect(res.statusCode).toBe(200)
        expect(res.json()).toEqual(expected)
      }
    }
  })

  it('refetches at once after a rotation, ignoring the cooldown, and answers the new status', async () => {
    const [k1, k2] = await Promise.all([keyPair('k1'), keyPair('k2')])
    const server = await startJwksServer([k1.jwk])
    const s = await setup(server)
    expect(await s.tryLogin(k1)).toBe(200)
    server.setKeys([k2.jwk])
    s.clock.advance(1000) // well within the 5 s cooldown
    const res = await s.call('POST', `${PATHS[1]}/${s.signerId}/refresh-keys`)
    expect(res.statusCode).toBe(200)
    expect(res.json().data).toEqual({
      source: 'jwks',
      kids: ['k2'],
      lastFetchAt: '2026-11-22T08:00:01.000Z',
      lastFetchError: null,
      nextRefreshAt: '2026-11-22T08:10:01.000Z',
    })
    expect(server.hits()).toBe(2)
    expect(await s.tryLogin(k1)).toBe(401)
    expect(await s.tryLogin(k2)).toBe(200)
    const status = await s.call('GET', `${PATHS[0]}/${s.signerId}/keys`)
    expect(status.json().data.kids).toEqual(['k2'])
  })

  it('shares one fetch between concurrent refresh calls', async () => {
    const server = await startJwksServer([(await keyPair('k1')).jwk])
    const s = await setup(server)
    await vi.waitFor(() => expect(server.hits()).toBe(1))
    server.respond({ delayMs: 100 })
    const url = `${PATHS[0]}/${s.signerId}/refresh-keys`
    const all = await Promise.all([1, 2, 3, 4].map(() => s.call('POST', url)))
    expect(all.map((r) => r.statusCode)).toEqual([200, 200, 200, 200])
    expect(server.hits()).toBe(2)
  })

  it('shows a failed refresh and keeps the previous keys', async () => {
    const k1 = await keyPair('k1')
    const server = await startJwksServer([k1.jwk])
    const s = await setup(server)
    await vi.waitFor(() => expect(server.hits()).toBe(1))
    for (const [response, error] of [
      [{ status: 503, body: 'down' }, /status 503/],
      [{ status: 200, type: 'text/html' }, /not JSON/],
    ] as const) {
      server.respond(response)
      s.clock.advance(1000)
      const res = await s.call('POST', `${PATHS[0]}/${s.signerId}/refresh-keys`)
      expect(res.statusCode).toBe(200)
      const data = res.json().data
      expect(data).toMatchObject({
        source: 'jwks',
        kids: ['k1'],
        lastFetchAt: s.clock().toISOString(),
      })
      expect(data.lastFetchError).toMatch(error)
      expect(await s.tryLogin(k1)).toBe(200)
    }
    await server.close()
    const res = await s.call('POST', `${PATHS[1]}/${s.signerId}/refresh-keys`)
    expect(res.json().data).toMatchObject({ kids: ['k1'], lastFetchError: expect.any(String) })
    expect(await s.tryLogin(k1)).toBe(200)
  })

  it('answers 404 NOT_FOUND for an unknown id and 401 without an admin session', async () => {
    const app = await buildTestApp()
    const call = caller(app, await login(app))
    const alice = (await call('POST', '/edge/management/v1/identities', { name: 'alice' })).json()
      .data.id as string
    await call('PUT', `/edge/management/v1/identities/${alice}/password`, {
      password: 'alice-password-123',
    })
    const user = caller(app, await login(app, 'alice', 'alice-password-123'))
    for (const path of PATHS) {
      for (const [method, suffix] of [
        ['GET', 'keys'],
        ['POST', 'refresh-keys'],
      ] as const) {
        const url = `${path}/no-such-signer/${suffix}`
        const missing = await call(method, url)
        expect(missing.statusCode).toBe(404)
        expect(missing.json().error).toMatchObject({ code: 'NOT_FOUND', cause: { field: 'id' } })
        const anonymous = await app.inject({ method, url })
        expect(anonymous.statusCode).toBe(401)
        expect(anonymous.json().error.code).toBe('UNAUTHORIZED')
        const notAdmin = await user(method, url)
        expect(notAdmin.statusCode).toBe(401)
        expect(notAdmin.json().error.code).toBe('UNAUTHORIZED')
      }
    }
  })
})
