import { beforeAll, describe, expect, it } from 'vitest'
import { THREAD_FAILURE_REASONS } from '../../src/jwt/signature-threads.js'
import { LOGIN_REASONS } from '../../src/metrics/login-reasons.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  caller,
  forEachStore,
  login,
  testClock,
} from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt, unsignedJwt } from '../helpers/jwt.js'
import { buildMeteredApp } from './scrape.js'

const M = '/edge/management/v1'
const ISSUER = 'https://idp.metrics.example'
const NOW = '2026-11-22T08:00:00.000Z'
const T = Math.floor(Date.parse(NOW) / 1000)

let cert: TestCert
let stranger: TestCert
beforeAll(async () => {
  ;[cert, stranger] = await Promise.all([makeCert(), makeCert()])
})

/** A metered app with a certificate signer, an enabled, a disabled and a JWT-less identity. */
async function setup(config: Record<string, unknown> = {}) {
  const clock = testClock(NOW)
  const metered = await buildMeteredApp({ clock, config })
  const { app } = metered
  const call = caller(app, await login(app))
  const signerId = (
    await call('POST', `${M}/external-jwt-signers`, {
      name: 'metrics',
      enabled: true,
      issuer: ISSUER,
      audience: 'ziti',
      certPem: cert.certPem,
      kid: 'k1',
    })
  ).json().data.id as string
  const passwordOnly = (
    await call('POST', `${M}/auth-policies`, {
      name: 'password only',
      primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: false } },
      secondary: { requireTotp: false, requireExtJwtSigner: null },
    })
  ).json().data.id as string
  const id = async (body: object) =>
    (await call('POST', `${M}/identities`, body)).json().data.id as string
  const ids = {
    alice: await id({ name: 'alice' }),
    bob: await id({ name: 'bob', disabled: true }),
    carol: await id({ name: 'carol', authPolicyId: passwordOnly }),
  }
  const sign = (claims: Record<string, unknown>, over: { kid?: string; key?: TestCert } = {}) =>
    signJwt(
      (over.key ?? cert).privateKey,
      { iss: ISSUER, aud: 'ziti', ...claims },
      { kid: over.kid ?? 'k1', now: clock() },
    )
  const jwtLogin = async (token?: string) =>
    (
      await app.inject({
        method: 'POST',
        url: '/edge/client/v1/authenticate?method=ext-jwt',
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      })
    ).statusCode
  const passwordLogin = async (payload: object) =>
    (await app.inject({ method: 'POST', url: `${M}/authenticate?method=password`, payload }))
      .statusCode
  return { ...metered, call, clock, signerId, ids, sign, jwtLogin, passwordLogin }
}

forEachStore(() => {
  describe('ctrl_logins_total', () => {
    it('counts each login by method, result and reason, as it happens', async () => {
      const s = await setup()
      const { alice, bob, carol } = s.ids
      const logins = async (method: string, result: string, reason: string) =>
        (await s.scrape()).value('ctrl_logins_total', { method, result, reason })

      // The admin's login in setup.
      expect(await logins('password', 'success', 'none')).toBe(1)
      expect(await s.passwordLogin({ username: ADMIN_USER, password: 'wrong-password-1' })).toBe(
        401,
      )
      expect(await s.passwordLogin({ username: 'nobody', password: ADMIN_PASSWORD })).toBe(401)
      expect(await logins('password', 'failure', 'bad_credentials')).toBe(2)
      expect(await s.passwordLogin({ username: ADMIN_USER })).toBe(400)
      expect(await s.passwordLogin({ username: ADMIN_USER, password: 7 })).toBe(400)
      expect(await logins('password', 'failure', 'malformed')).toBe(2)

      const cases: [string | undefined, number, string][] = [
        [await s.sign({ sub: alice }), 200, 'none'],
        [undefined, 401, 'missing'],
        ['not-a-jwt', 401, 'malformed'],
        [unsignedJwt({ iss: ISSUER, sub: alice }, { kid: 'k1' }), 401, 'bad_signature'],
        [await s.sign({ sub: alice, iss: 'https://nobody.example' }), 401, 'unknown_issuer'],
        [await s.sign({ sub: alice }, { kid: 'k2' }), 401, 'unknown_kid'],
        [await s.sign({ sub: alice }, { key: stranger }), 401, 'bad_signature'],
        [await s.sign({ sub: alice, exp: T - 3600 }), 401, 'expired'],
        [await s.sign({ sub: alice, aud: 'other' }), 401, 'audience'],
        [await s.sign({ sub: 'nobody' }), 401, 'no_identity'],
        [await s.sign({ sub: bob }), 401, 'identity_disabled'],
        [await s.sign({ sub: carol }), 401, 'policy'],
      ]
      for (const [token, status, reason] of cases) {
        const before = await logins('ext-jwt', status === 200 ? 'success' : 'failure', reason)
        expect(await s.jwtLogin(token)).toBe(status)
        const after = await logins('ext-jwt', status === 200 ? 'success' : 'failure', reason)
        expect({ reason, moved: after - before }).toEqual({ reason, moved: 1 })
      }
      // An unknown method is no login of either kind.
      await s.app.inject({ method: 'POST', url: `${M}/authenticate?method=cert`, payload: {} })
      const all = (await s.scrape()).matching('ctrl_logins_total')
      for (const sample of all) {
        expect(['password', 'ext-jwt']).toContain(sample.labels.method)
        expect(LOGIN_REASONS).toContain(sample.labels.reason)
      }
      expect(all.reduce((n, sample) => n + sample.value, 0)).toBe(1 + 4 + cases.length)
    })

    it('counts the group commits of logins: units of work, logins committed, seconds in flight', async () => {
      const s = await setup()
      const commits = async () => {
        const scraped = await s.scrape()
        return {
          commits: scraped.value('ctrl_login_commits_total'),
          logins: scraped.value('ctrl_login_commit_logins_total'),
          seconds: scraped.value('ctrl_login_commit_seconds_total'),
        }
      }
      // The admin's login in setup: one commit of one login.
      const before = await commits()
      expect(before).toMatchObject({ commits: 1, logins: 1 })
      expect(before.seconds).toBeGreaterThan(0)
      const tokens = await Promise.all(
        Array.from({ length: 12 }, (_, i) => s.sign({ sub: s.ids.alice, jti: `c${i}` })),
      )
      expect(await Promise.all(tokens.map((t) => s.jwtLogin(t)))).toEqual(tokens.map(() => 200))
      // A refused login stores nothing.
      expect(await s.jwtLogin(await s.sign({ sub: 'nobody' }))).toBe(401)
      const after = await commits()
      expect(after.logins - before.logins).toBe(12)
      expect(after.commits - before.commits).toBeGreaterThanOrEqual(1)
      expect(after.commits - before.commits).toBeLessThanOrEqual(12)
      expect(after.seconds).toBeGreaterThan(before.seconds)
      // A scrape only reads the totals.
      expect(await commits()).toEqual(after)
    })

    it('counts a login refused by the rate limit as rate_limited', async () => {
      const s = await setup({ authRateLimit: 1 })
      s.clock.advance(1000)
      expect(await s.jwtLogin(await s.sign({ sub: s.ids.alice }))).toBe(200)
      expect(await s.jwtLogin(await s.sign({ sub: s.ids.alice }))).toBe(429)
      const scraped = await s.scrape()
      expect(
        scraped.value('ctrl_logins_total', {
          method: 'ext-jwt',
          result: 'failure',
          reason: 'rate_limited',
        }),
      ).toBe(1)
    })
  })

  describe('ctrl_signature_checks_total and ctrl_signature_thread_failures_total', () => {
    it('counts each signature check by where it ran, and threads given up by reason', async () => {
      const s = await setup()
      const checks = async (runner: string) =>
        (await s.scrape()).value('ctrl_signature_checks_total', { runner })
      expect(await checks('thread')).toBe(0)
      expect(await s.jwtLogin(await s.sign({ sub: s.ids.alice }))).toBe(200)
      expect(await checks('thread')).toBe(1)
      // A forged signature is checked too; a kid the signer lacks never reaches a check.
      expect(await s.jwtLogin(await s.sign({ sub: s.ids.alice }, { key: stranger }))).toBe(401)
      expect(await s.jwtLogin(await s.sign({ sub: s.ids.alice }, { kid: 'k2' }))).toBe(401)
      expect(await checks('thread')).toBe(2)
      const runners = (await s.scrape()).matching('ctrl_signature_checks_total')
      expect(runners.map((r) => [r.labels.runner, r.value]).sort()).toEqual([
        ['pool', 0],
        ['thread', 2],
      ])
      const failures = (await s.scrape()).matching('ctrl_signature_thread_failures_total')
      expect(failures.map((f) => [f.labels.reason, f.value]).sort()).toEqual(
        [...THREAD_FAILURE_REASONS].sort().map((reason) => [reason, 0]),
      )
    })
  })

  describe('ctrl_secondary_checks_total and the verified-token cache', () => {
    it('counts met and unmet secondary checks with their reason, and cache hits and misses', async () => {
      const s = await setup()
      const policy = (
        await s.call('POST', `${M}/auth-policies`, {
          name: 'needs jwt',
          primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
          secondary: { requireTotp: false, requireExtJwtSigner: s.signerId },
        })
      ).json().data.id as string
      await s.call('PATCH', `${M}/identities/${s.ids.alice}`, { authPolicyId: policy })
      await s.call('PUT', `${M}/identities/${s.ids.alice}/password`, {
        password: 'alice-password-1',
      })
      const checks = async (result: string, reason: string) =>
        (await s.scrape()).value('ctrl_secondary_checks_total', { result, reason })
      const cache = async (result: string) =>
        (await s.scrape()).value('ctrl_verified_token_cache_total', { result })

      expect(await s.passwordLogin({ username: 'alice', password: 'alice-password-1' })).toBe(200)
      expect(await checks('unmet', 'missing')).toBe(1)
      const session = await login(s.app, 'alice', 'alice-password-1')
      const identity = (authorization: string) =>
        s.app.inject({
          method: 'GET',
          url: '/edge/client/v1/current-identity',
          headers: { 'zt-session': session, authorization },
        })
      const token = await s.sign({ sub: s.ids.alice })
      expect((await identity(`Bearer ${token}`)).statusCode).toBe(200)
      expect(await checks('met', 'none')).toBe(1)
      expect(await cache('miss')).toBe(1)
      expect(await cache('hit')).toBe(0)
      expect((await s.scrape()).value('ctrl_verified_token_cache_entries')).toBe(1)
      expect((await identity(`Bearer ${token}`)).statusCode).toBe(200)
      expect(await checks('met', 'none')).toBe(2)
      expect(await cache('hit')).toBe(1)
      expect(await cache('miss')).toBe(1)

      const other = await s.sign({ sub: s.ids.carol })
      expect((await identity(`Bearer ${other}`)).statusCode).toBe(401)
      expect(await checks('unmet', 'other_identity')).toBe(1)
      const expired = await s.sign({ sub: s.ids.alice, exp: T - 3600 })
      expect((await identity(`Bearer ${expired}`)).statusCode).toBe(401)
      expect(await checks('unmet', 'expired')).toBe(1)
    })
  })
})
