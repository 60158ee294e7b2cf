import { exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { type JwksServer, startJwksServer } from '../helpers/jwks-server.js'
import { signJwt } from '../helpers/jwt.js'

const ISSUER = 'https://login.corp.example'
const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
// Short real timings: the refresh timer runs on the real clock, as in production.
const TIMING = { jwksMaxAgeMs: 300, jwksCooldownMs: 100 }
const WAIT = { timeout: 5000, interval: 20 }

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' },
  }
}
type Pair = Awaited<ReturnType<typeof keyPair>>

/** The real app (real clock) with one JWKS signer and one identity. */
async function setup(server: JwksServer, config: Partial<typeof TIMING> = {}) {
  const app = await buildTestApp({ config: { ...TIMING, ...config } })
  const call = caller(app, await login(app))
  const signer = await call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'corp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    jwksEndpoint: server.url,
  })
  expect(signer.statusCode).toBe(201)
  const identityId = (
    await call('POST', '/edge/management/v1/identities', { name: 'alice' })
  ).json().data.id as string
  const token = (pair: Pair) =>
    signJwt(pair.privateKey, { iss: ISSUER, aud: 'ziti', sub: identityId }, { kid: pair.kid })
  const tryLogin = async (jwt: string) =>
    (await app.inject({ method: 'POST', url: LOGIN, headers: { authorization: `Bearer ${jwt}` } }))
      .statusCode
  await vi.waitFor(() => expect(server.hits()).toBeGreaterThanOrEqual(1), WAIT)
  return { app, call, signerId: signer.json().data.id as string, token, tryLogin }
}

/**
 * Waits, without sending a single request to the app, until the timer has fetched twice more: the
 * first of those fetches then has ended (the next one is only scheduled when it ends).
 */
async function twoTimedRefreshes(server: JwksServer) {
  const before = server.hits()
  await vi.waitFor(() => expect(server.hits()).toBeGreaterThanOrEqual(before + 2), WAIT)
}

describe('a key the provider retired', () => {
  it('refreshes the set on a timer, with no request to trigger it', async () => {
    const k1 = await keyPair('k1')
    const server = await startJwksServer([k1.jwk])
    await setup(server)
    await twoTimedRefreshes(server)
    await twoTimedRefreshes(server)
  })

  it('refuses a token accepted (and cached) before the removal after the next refresh', async () => {
    const [k1, k2] = await Promise.all([keyPair('k1'), keyPair('k2')])
    const server = await startJwksServer([k1.jwk, k2.jwk])
    const s = await setup(server)
    const seen = await s.token(k1)
    const other = await s.token(k2)
    expect(await s.tryLogin(seen)).toBe(200)
    expect(await s.tryLogin(seen)).toBe(200)
    expect(await s.tryLogin(other)).toBe(200)

    server.setKeys([k2.jwk])
    await twoTimedRefreshes(server)
    expect(await s.tryLogin(seen)).toBe(401)
    expect(await s.tryLogin(other)).toBe(200) // only the retired kid's tokens end
  })

  it('refuses a token never presented before the removal', async () => {
    const [k1, k2] = await Promise.all([keyPair('k1'), keyPair('k2')])
    const server = await startJwksServer([k1.jwk, k2.jwk])
    const s = await setup(server)
    const unseen = await s.token(k1)
    server.setKeys([k2.jwk])
    await twoTimedRefreshes(server)
    expect(await s.tryLogin(unseen)).toBe(401)
    expect(await s.tryLogin(await s.token(k2))).toBe(200)
  })

  it('drops cached tokens of a kid as soon as any successful fetch lacks it', async () => {
    const [k1, k2, k3] = await Promise.all([keyPair('k1'), keyPair('k2'), keyPair('k3')])
    const server = await startJwksServer([k1.jwk])
    // A long max age: here the refetch comes from a token with an unknown kid, not the timer.
    const s = await setup(server, { jwksMaxAgeMs: 600_000 })
    const seen = await s.token(k1)
    expect(await s.tryLogin(seen)).toBe(200)
    server.setKeys([k2.jwk, k3.jwk])
    await vi.waitFor(async () => expect(await s.tryLogin(await s.token(k2))).toBe(200), WAIT)
    expect(await s.tryLogin(seen)).toBe(401)
  })

  it('retires a kid whose key the provider replaced under the same kid', async () => {
    const old = await keyPair('k1')
    const replaced = await keyPair('k1')
    const server = await startJwksServer([old.jwk])
    const s = await setup(server)
    const seen = await s.token(old)
    expect(await s.tryLogin(seen)).toBe(200)
    server.setKeys([replaced.jwk])
    await twoTimedRefreshes(server)
    expect(await s.tryLogin(seen)).toBe(401)
    expect(await s.tryLogin(await s.token(replaced))).toBe(200)
  })

  it('keeps the keys, cached tokens included, while fetches fail (stale-if-error)', async () => {
    const k1 = await keyPair('k1')
    const server = await startJwksServer([k1.jwk])
    const s = await setup(server)
    const seen = await s.token(k1)
    expect(await s.tryLogin(seen)).toBe(200)
    for (const response of [{ status: 500, body: 'down' }, { body: '{"keys":"no"}' }]) {
      server.respond(response)
      await twoTimedRefreshes(server)
      expect(await s.tryLogin(seen)).toBe(200)
      expect(await s.tryLogin(await s.token(k1))).toBe(200)
    }
  })

  it('stops refreshing a deleted signer', async () => {
    const server = await startJwksServer([(await keyPair('k1')).jwk])
    const s = await setup(server)
    const deleted = await s.call('DELETE', `/edge/management/v1/external-jwt-signers/${s.signerId}`)
    expect(deleted.statusCode).toBe(200)
    const hits = server.hits()
    // A negative can only be shown by waiting: several max ages pass without a fetch.
    await new Promise((r) => setTimeout(r, 4 * TIMING.jwksMaxAgeMs))
    expect(server.hits()).toBeLessThanOrEqual(hits + 1) // at most one fetch already under way
  })
})
