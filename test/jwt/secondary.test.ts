import { Agent, get as httpGet } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'

const NOW = '2026-11-22T08:00:00.000Z'
const ISSUER = 'https://mfa.corp.example'
const M = '/edge/management/v1'
const C = '/edge/client/v1'

let key: TestCert
let rogue: TestCert
let key2: TestCert
beforeAll(async () => {
  ;[key, rogue, key2] = await Promise.all([makeCert(), makeCert(), makeCert()])
})

/**
 * An app with a certificate signer required as secondary factor by a policy, and two identities
 * under it with passwords: alice (admin) and bob.
 */
async function setup(over: { verifiedCacheEntries?: number } = {}) {
  const clock = testClock(NOW)
  const app = await buildTestApp({ clock, ...over })
  const root = await login(app)
  const call = caller(app, root)
  const signer = await call('POST', `${M}/external-jwt-signers`, {
    name: 'mfa',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: key.certPem,
    kid: 'mfa-1',
    externalAuthUrl: 'https://mfa.corp.example/authorize',
  })
  const signerId = signer.json().data.id as string
  const policy = await call('POST', `${M}/auth-policies`, {
    name: 'needs jwt',
    primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
    secondary: { requireTotp: false, requireExtJwtSigner: signerId },
  })
  const policyId = policy.json().data.id as string
  const ids: Record<string, string> = {}
  for (const [name, isAdmin] of [
    ['alice', true],
    ['bob', false],
  ] as const) {
    ids[name] = (
      await call('POST', `${M}/identities`, { name, isAdmin, authPolicyId: policyId })
    ).json().data.id
    await call('PUT', `${M}/identities/${ids[name]}/password`, { password: `${name}-password-12` })
  }
  const jwt = (sub: string, over: Record<string, unknown> = {}, cert = key) =>
    signJwt(
      cert.privateKey,
      { iss: ISSUER, aud: 'ziti', sub, ...over },
      { kid: 'mfa-1', now: clock() },
    )
  return { app, clock, call, signerId, policyId, ids, jwt }
}

/**
 * A second signer, `primary`, for `cert`, that the policy allows for primary login but does not
 * require; resolves with a token of it naming `sub`.
 */
async function primaryToken(s: Awaited<ReturnType<typeof setup>>, cert: TestCert, sub: string) {
  const primary = await s.call('POST', `${M}/external-jwt-signers`, {
    name: 'primary',
    enabled: true,
    issuer: 'https://primary.example',
    audience: 'ziti',
    certPem: cert.certPem,
    kid: 'p-1',
  })
  expect(primary.statusCode).toBe(201)
  return signJwt(
    cert.privateKey,
    { iss: 'https://primary.example', aud: 'ziti', sub },
    { kid: 'p-1', now: s.clock() },
  )
}

function get(app: FastifyInstance, url: string, session: string, bearer?: string) {
  return app.inject({
    method: 'GET',
    url,
    headers: { 'zt-session': session, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
  })
}

forEachStore(() => {
  describe('secondary factor', () => {
    it('leaves a password session partial: only its own session is readable until a JWT comes along', async () => {
      const s = await setup()
      const res = await s.app.inject({
        method: 'POST',
        url: `${M}/authenticate?method=password`,
        payload: { username: 'alice', password: 'alice-password-12' },
      })
      expect(res.statusCode).toBe(200)
      const query = {
        typeId: 'EXT-JWT',
        provider: 'url',
        httpUrl: 'https://mfa.corp.example/authorize',
        id: s.signerId,
      }
      expect(res.json().data.authQueries).toEqual([query])
      const challenge = res.headers['www-authenticate'] as string
      expect(challenge).toContain('realm="openziti-secondary-ext-jwt"')
      expect(challenge).toContain('error="missing"')
      expect(challenge).toContain(`id="${s.signerId}"`)
      expect(challenge).toContain(`issuer="${ISSUER}"`)
      const session = res.headers['zt-session'] as string

      for (const api of [C, M]) {
        const cur = await get(s.app, `${api}/current-api-session`, session)
        expect(cur.statusCode).toBe(200)
        expect(cur.json().data.authQueries).toEqual([query])
      }
      const identity = await get(s.app, `${C}/current-identity`, session)
      expect(identity.statusCode).toBe(401)
      expect(identity.headers['www-authenticate']).toContain('realm="openziti-secondary-ext-jwt"')
      expect((await get(s.app, `${M}/external-jwt-signers`, session)).statusCode).toBe(401)

      const token = await s.jwt(s.ids.alice as string)
      const full = await get(s.app, `${C}/current-identity`, session, token)
      expect(full.statusCode).toBe(200)
      expect(full.json().data).toMatchObject({
        id: s.ids.alice,
        name: 'alice',
        isAdmin: true,
        authPolicyId: s.policyId,
      })
      expect((await get(s.app, `${M}/external-jwt-signers`, session, token)).statusCode).toBe(200)
      expect(
        (await get(s.app, `${M}/current-api-session`, session, token)).json().data.authQueries,
      ).toEqual([])
      // The factor is per request: the next call without it is partial again.
      expect((await get(s.app, `${M}/external-jwt-signers`, session)).statusCode).toBe(401)
    })

    it('answers missing, expired, wrongly signed, wrong-signer and wrong-identity tokens with 401', async () => {
      const s = await setup()
      const session = await login(s.app, 'alice', 'alice-password-12')
      const t = Math.floor(Date.parse(NOW) / 1000)
      const other = await s.call('POST', `${M}/external-jwt-signers`, {
        name: 'other',
        enabled: true,
        issuer: 'https://other.example',
        audience: 'ziti',
        certPem: key2.certPem,
        kid: 'o-1',
      })
      expect(other.statusCode).toBe(201)
      const cases: [string | undefined, string][] = [
        [undefined, 'missing'],
        [await s.jwt(s.ids.alice as string, { exp: t - 3600 }), 'expired'],
        [await s.jwt(s.ids.alice as string, {}, rogue), 'invalid'],
        [
          await signJwt(
            key2.privateKey,
            { iss: 'https://other.example', aud: 'ziti', sub: s.ids.alice as string },
            { kid: 'o-1', now: s.clock() },
          ),
          // Another signer's token is no token for the required one: `missing`, as upstream.
          'missing',
        ],
        [await s.jwt(s.ids.bob as string), 'invalid'],
        // Nor is one that cannot be bound to any signer.
        ['garbage', 'missing'],
      ]
      for (const [bearer, error] of cases) {
        for (const url of [`${C}/current-identity`, `${M}/identities`]) {
          const res = await get(s.app, url, session, bearer)
          expect(res.statusCode, `${url} ${error}`).toBe(401)
          expect(res.json().error.code).toBe('UNAUTHORIZED')
          expect(res.headers['www-authenticate'], `${url} ${error}`).toContain(`error="${error}"`)
        }
      }
    })

    it("answers `missing` at a login with the primary provider's token when the policy requires another", async () => {
      const s = await setup()
      const token = await primaryToken(s, key2, s.ids.bob as string)
      const res = await s.app.inject({
        method: 'POST',
        url: `${C}/authenticate?method=ext-jwt`,
        headers: { authorization: `Bearer ${token}` },
      })
      expect(res.statusCode).toBe(200)
      expect(res.json().data.authQueries).toMatchObject([{ typeId: 'EXT-JWT', id: s.signerId }])
      const challenge = res.headers['www-authenticate'] as string
      expect(challenge).toContain('realm="openziti-secondary-ext-jwt"')
      expect(challenge).toContain('error="missing"')
      // Then the required provider's token completes the session.
      const session = res.headers['zt-session'] as string
      const second = await s.jwt(s.ids.bob as string)
      expect((await get(s.app, `${C}/current-identity`, session, token)).statusCode).toBe(401)
      expect((await get(s.app, `${C}/current-identity`, session, second)).statusCode).toBe(200)
    })

    it('lets one JWT satisfy both factors at ext-jwt login', async () => {
      const s = await setup()
      const token = await s.jwt(s.ids.bob as string)
      const res = await s.app.inject({
        method: 'POST',
        url: `${C}/authenticate?method=ext-jwt`,
        headers: { authorization: `Bearer ${token}` },
      })
      expect(res.statusCode).toBe(200)
      expect(res.json().data.authQueries).toEqual([])
      expect(res.headers['www-authenticate']).toBeUndefined()
      const session = res.headers['zt-session'] as string
      expect((await get(s.app, `${C}/current-identity`, session, token)).statusCode).toBe(200)
    })

    it('accepts the secondary JWT as a second Authorization header beside the primary one', async () => {
      const s = await setup()
      const primaryJwt = await primaryToken(s, await makeCert(), s.ids.bob as string)
      const onlyPrimary = await s.app.inject({
        method: 'POST',
        url: `${C}/authenticate?method=ext-jwt`,
        headers: { authorization: `Bearer ${primaryJwt}` },
      })
      expect(onlyPrimary.statusCode).toBe(200)
      expect(onlyPrimary.json().data.authQueries).toHaveLength(1)
      const both = await s.app.inject({
        method: 'POST',
        url: `${C}/authenticate?method=ext-jwt`,
        // Two Authorization headers; light-my-request sends an array as repeated headers.
        headers: {
          authorization: [`Bearer ${primaryJwt}`, `Bearer ${await s.jwt(s.ids.bob as string)}`],
        } as unknown as Record<string, string>,
      })
      expect(both.statusCode).toBe(200)
      expect(both.json().data.authQueries).toEqual([])
    })

    it('applies changes to the very next request', async () => {
      const s = await setup()
      const session = await login(s.app, 'alice', 'alice-password-12')
      const token = await s.jwt(s.ids.alice as string)
      const ok = async () => (await get(s.app, `${C}/current-identity`, session, token)).statusCode
      expect(await ok()).toBe(200)
      expect(await ok()).toBe(200) // now served from the verified-token cache

      await s.call('PATCH', `${M}/external-jwt-signers/${s.signerId}`, { enabled: false })
      expect(await ok()).toBe(401)
      await s.call('PATCH', `${M}/external-jwt-signers/${s.signerId}`, { enabled: true })
      expect(await ok()).toBe(200)

      await s.call('PATCH', `${M}/external-jwt-signers/${s.signerId}`, { audience: 'other' })
      expect(await ok()).toBe(401)
      await s.call('PATCH', `${M}/external-jwt-signers/${s.signerId}`, {
        audience: 'ziti',
        issuer: 'https://moved.example',
      })
      expect(await ok()).toBe(401)
      await s.call('PATCH', `${M}/external-jwt-signers/${s.signerId}`, {
        issuer: ISSUER,
        certPem: key2.certPem,
      })
      expect(await ok()).toBe(401)
      await s.call('PATCH', `${M}/external-jwt-signers/${s.signerId}`, { certPem: key.certPem })
      expect(await ok()).toBe(200)

      // The policy: pointing the secondary at another signer makes this token insufficient...
      const other = await s.call('POST', `${M}/external-jwt-signers`, {
        name: 'other',
        enabled: true,
        issuer: 'https://other.example',
        audience: 'ziti',
        certPem: key2.certPem,
        kid: 'o-1',
      })
      await s.call('PATCH', `${M}/auth-policies/${s.policyId}`, {
        secondary: { requireExtJwtSigner: other.json().data.id },
      })
      expect(await ok()).toBe(401)
      // ...and dropping the requirement makes the session fully authenticated without any token.
      await s.call('PATCH', `${M}/auth-policies/${s.policyId}`, {
        secondary: { requireExtJwtSigner: null },
      })
      expect((await get(s.app, `${C}/current-identity`, session)).statusCode).toBe(200)
      await s.call('PATCH', `${M}/auth-policies/${s.policyId}`, {
        secondary: { requireExtJwtSigner: s.signerId },
      })
      expect(await ok()).toBe(200)

      // The identity's policy, then the identity itself.
      await s.call('PATCH', `${M}/identities/${s.ids.alice}`, { authPolicyId: 'default' })
      expect((await get(s.app, `${C}/current-identity`, session)).statusCode).toBe(200)
      await s.call('PATCH', `${M}/identities/${s.ids.alice}`, { authPolicyId: s.policyId })
      expect((await get(s.app, `${C}/current-identity`, session)).statusCode).toBe(401)
      expect(await ok()).toBe(200)
      await s.call('PATCH', `${M}/identities/${s.ids.alice}`, { disabled: true })
      expect(await ok()).toBe(401)
    })

    it('stops honouring a cached token at its exp (plus the clock tolerance)', async () => {
      const s = await setup({ verifiedCacheEntries: 20 })
      const session = await login(s.app, 'bob', 'bob-password-12')
      for (let i = 0; i < 60; i++) {
        const token = await s.jwt(s.ids.bob as string, { jti: `t${i}` })
        expect((await get(s.app, `${C}/current-identity`, session, token)).statusCode).toBe(200)
      }
      const t = Math.floor(Date.parse(NOW) / 1000)
      const short = await s.jwt(s.ids.bob as string, { exp: t + 60 })
      expect((await get(s.app, `${C}/current-identity`, session, short)).statusCode).toBe(200)
      s.clock.advance(60_000 + 30_000 + 1000)
      expect((await get(s.app, `${C}/current-identity`, session, short)).statusCode).toBe(401)
    })
  })
})

/** GETs over `agent` (one keep-alive socket): status, and whether the socket was reused. */
function overAgent(
  agent: Agent,
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }))
    })
    req.on('error', reject)
  })
}

describe('secondary factor over one keep-alive connection', () => {
  it('judges each request by the token it presents, whatever the connection presented before', async () => {
    const s = await setup()
    const alice = await login(s.app, 'alice', 'alice-password-12')
    const bob = await login(s.app, 'bob', 'bob-password-12')
    await s.app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = s.app.server.address() as AddressInfo
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    onTestFinished(async () => {
      agent.destroy()
      await s.app.close()
    })
    const forAlice = await s.jwt(s.ids.alice as string)
    const forBob = await s.jwt(s.ids.bob as string)
    const expired = await s.jwt(s.ids.alice as string, {
      exp: Math.floor(Date.parse(NOW) / 1000) - 600,
    })
    const call = (session: string, bearer?: string) =>
      overAgent(agent, port, `${C}/current-identity`, {
        'zt-session': session,
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      })

    expect(await call(alice, forAlice)).toEqual({ status: 200, reused: false })
    expect(await call(alice, forAlice)).toEqual({ status: 200, reused: true })
    // The same connection, another token: bob's (verified for bob), then an expired one of alice.
    expect(await call(alice, forBob)).toEqual({ status: 401, reused: true })
    expect(await call(bob, forBob)).toEqual({ status: 200, reused: true })
    expect(await call(alice, forBob)).toEqual({ status: 401, reused: true })
    expect(await call(alice, expired)).toEqual({ status: 401, reused: true })
    expect(await call(alice)).toEqual({ status: 401, reused: true })
    expect(await call(alice, forAlice)).toEqual({ status: 200, reused: true })
    expect(await call(bob, forAlice)).toEqual({ status: 401, reused: true })
  })
})
