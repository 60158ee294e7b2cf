import { beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'

const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
const ISSUER = 'https://idp.corp.example'
const NOW = '2026-11-22T08:00:00.000Z'
const TOLERANCE_S = 30 // CTRL_JWT_CLOCK_TOLERANCE, set

let shortLived: TestCert
beforeAll(async () => {
  // Valid for one more hour on the test clock.
  shortLived = await makeCert({
    notBefore: new Date('2026-01-01T00:00:00Z'),
    notAfter: new Date('2026-11-22T09:00:00Z'),
  })
})

async function setup(config: Record<string, unknown> = {}) {
  const clock = testClock(NOW)
  const app = await buildTestApp({ clock, config })
  const call = caller(app, await login(app))
  const signer = await call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'corp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: shortLived.certPem,
    kid: 'corp-1',
  })
  expect(signer.statusCode).toBe(201)
  const identityId = (
    await call('POST', '/edge/management/v1/identities', { name: 'alice' })
  ).json().data.id as string
  const sign = (over: Record<string, unknown> = {}) =>
    signJwt(
      shortLived.privateKey,
      { iss: ISSUER, aud: 'ziti', sub: identityId, ...over },
      {
        kid: 'corp-1',
        now: clock(),
      },
    )
  const tryLogin = async (jwt: string) =>
    (
      await app.inject({
        method: 'POST',
        url: LOGIN,
        headers: { authorization: `Bearer ${jwt}` },
      })
    ).statusCode
  return { clock, sign, tryLogin, call, signerId: signer.json().data.id as string }
}

forEachStore(() => {
  describe('token times (info findings)', () => {
    it('refuses a token whose iat is more than 5 s in the future, by default', async () => {
      const s = await setup()
      const now = Math.floor(s.clock().getTime() / 1000)
      expect(await s.tryLogin(await s.sign({ iat: now }))).toBe(200)
      expect(await s.tryLogin(await s.sign({ iat: now + 5 }))).toBe(200)
      expect(await s.tryLogin(await s.sign({ iat: now + 6 }))).toBe(401)
      expect(await s.tryLogin(await s.sign({ iat: now - 60 }))).toBe(200)
    })

    it('refuses a token whose iat is further in the future than the clock tolerance', async () => {
      const s = await setup({ jwtClockToleranceMs: TOLERANCE_S * 1000 })
      const now = Math.floor(s.clock().getTime() / 1000)
      expect(await s.tryLogin(await s.sign({ iat: now + TOLERANCE_S - 5 }))).toBe(200)
      expect(await s.tryLogin(await s.sign({ iat: now + TOLERANCE_S + 60 }))).toBe(401)
      expect(await s.tryLogin(await s.sign({ iat: now + 86_400, exp: now + 90_000 }))).toBe(401)
      expect(await s.tryLogin(await s.sign({ iat: now - 60 }))).toBe(200)
    })

    it('refuses with 401 a claim holding a control character (PostgreSQL cannot even compare a NUL)', async () => {
      const s = await setup()
      for (const sub of ['a\u0000b', '\u0000', 'line\nbreak']) {
        expect(await s.tryLogin(await s.sign({ sub })), JSON.stringify(sub)).toBe(401)
      }
      expect(await s.tryLogin(await s.sign())).toBe(200) // the identity itself still logs in
    })

    it('refuses with 401 a claim holding a lone surrogate (PostgreSQL compared it as U+FFFD, matching another identity)', async () => {
      const s = await setup()
      const patched = await s.call(
        'PATCH',
        `/edge/management/v1/external-jwt-signers/${s.signerId}`,
        {
          useExternalId: true,
        },
      )
      expect(patched.statusCode).toBe(200)
      const bob = await s.call('POST', '/edge/management/v1/identities', {
        name: 'bob',
        externalId: 'x\ufffdy',
      })
      expect(bob.statusCode).toBe(201)
      expect(await s.tryLogin(await s.sign({ sub: 'x\ud800y' }))).toBe(401)
      expect(await s.tryLogin(await s.sign({ sub: 'x\udfffy' }))).toBe(401)
      expect(await s.tryLogin(await s.sign({ sub: 'x\ufffdy' }))).toBe(200)
    })

    it('drops a cached verification when the certificate signer’s certificate expires', async () => {
      const s = await setup()
      const now = Math.floor(s.clock().getTime() / 1000)
      // The token outlives the certificate by a day.
      const jwt = await s.sign({ exp: now + 2 * 86_400 })
      expect(await s.tryLogin(jwt)).toBe(200)
      s.clock.advance(30 * 60_000)
      expect(await s.tryLogin(jwt)).toBe(200) // answered from the verified-token cache
      s.clock.set('2026-11-22T09:05:00.000Z') // past notAfter and the tolerance
      expect(await s.tryLogin(jwt)).toBe(401)
    })
  })
})
