import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import {
  ADMIN_PASSWORD,
  forEachStore,
  loopbackOnlyResolver,
  testClock,
  testConfig,
} from '../helpers/app.js'
import { freshPostgresUrl, PG_URL } from '../helpers/stores.js'
import { C, loginFixture, M } from './fixture.js'

const RIGHT = 'alice-password-1'
const WRONG = 'not-the-password'

forEachStore((kind) => {
  describe('brute force: a backoff per user name and address, and per name from everywhere', () => {
    it('after 10 failures from one address answers it 429 for 1 s, then 2 s; a success resets the count', async () => {
      const s = await loginFixture(kind)
      const attacker = '203.0.113.7'
      for (let i = 0; i < 10; i++) {
        expect((await s.passwordLogin('alice', WRONG, attacker)).statusCode).toBe(401)
      }
      // From that address even the right password is refused now, before any hashing.
      const locked = await s.passwordLogin('alice', RIGHT, attacker)
      expect(locked.statusCode).toBe(429)
      expect(locked.json().error.code).toBe('RATE_LIMITED')
      expect(locked.headers['retry-after']).toBe('1')
      // Another user name is not affected.
      expect((await s.passwordLogin('admin', WRONG, attacker)).statusCode).toBe(401)
      s.clock.advance(1000)
      expect((await s.passwordLogin('alice', WRONG, attacker)).statusCode).toBe(401)
      const doubled = await s.passwordLogin('alice', RIGHT, attacker)
      expect(doubled.statusCode).toBe(429)
      expect(doubled.headers['retry-after']).toBe('2')
      s.clock.advance(2000)
      expect((await s.passwordLogin('alice', RIGHT, attacker)).statusCode).toBe(200)
      // Reset: one more failure is a plain 401 again.
      expect((await s.passwordLogin('alice', WRONG, attacker)).statusCode).toBe(401)
      expect((await s.passwordLogin('alice', RIGHT, attacker)).statusCode).toBe(200)
    })

    it("one address's failures do not lock the name's owner out elsewhere (the admin's either)", async () => {
      const s = await loginFixture(kind, { loginLockoutAttempts: 3 })
      for (const name of ['alice', 'admin']) {
        for (let i = 0; i < 4; i++) await s.passwordLogin(name, WRONG, '198.51.100.1')
        expect((await s.passwordLogin(name, WRONG, '198.51.100.1')).statusCode).toBe(429)
      }
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.10')).statusCode).toBe(200)
      expect((await s.passwordLogin('admin', ADMIN_PASSWORD, '192.0.2.11')).statusCode).toBe(200)
      // An IPv6 client is one address by its /64: rotating through it gains nothing.
      for (let i = 0; i < 3; i++) {
        expect((await s.passwordLogin('alice', WRONG, `2001:db8:1:2::${i + 1}`)).statusCode).toBe(
          401,
        )
      }
      expect((await s.passwordLogin('alice', WRONG, '2001:db8:1:2::ff')).statusCode).toBe(429)
    })

    it('failures from many addresses lock the name from everywhere at ten times the attempts', async () => {
      const s = await loginFixture(kind, { loginLockoutAttempts: 2 })
      // 19 failures, each address failing once (under its own 2): the name is not locked yet.
      for (let i = 0; i < 19; i++) {
        const from = `203.0.113.${i}`
        expect((await s.passwordLogin('alice', WRONG, from)).statusCode, `failure ${i}`).toBe(401)
      }
      expect((await s.passwordLogin('alice', WRONG, '203.0.113.100')).statusCode).toBe(401)
      // The 20th locked it: the right password from an address never seen is refused.
      const locked = await s.passwordLogin('alice', RIGHT, '192.0.2.1')
      expect(locked.statusCode).toBe(429)
      expect(locked.headers['retry-after']).toBe('1')
      s.clock.advance(1000)
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.1')).statusCode).toBe(200)
    })

    it('one address failing for a day, lock after lock, never locks the name from elsewhere', async () => {
      const s = await loginFixture(kind, { loginLockoutAttempts: 2 })
      // 2 failures lock the address; then one more each time its lock ends: 30 in all, more than
      // the 20 (ten times the attempts) that lock the name from every address when they come from
      // ten addresses. An address adds only its first 2.
      let failures = 0
      while (failures < 30) {
        const res = await s.passwordLogin('alice', WRONG, '198.51.100.9')
        if (res.statusCode === 401) failures++
        else s.clock.advance(Number(res.headers['retry-after']) * 1000)
      }
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.20')).statusCode).toBe(200)
    })

    it('many addresses lock the name, but not from where its owner logged in within 30 days', async () => {
      // One failure locks an address; ten addresses lock the name.
      const s = await loginFixture(kind, { loginLockoutAttempts: 1 })
      let next = 0
      const lockName = async () => {
        for (let a = 0; a < 10; a++) {
          expect((await s.passwordLogin('alice', WRONG, `203.0.113.${next++}`)).statusCode).toBe(
            401,
          )
        }
      }
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.30')).statusCode).toBe(200)
      await lockName()
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.31')).statusCode).toBe(429)
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.30')).statusCode).toBe(200)
      // That success cleared the name's count from every address: the new address gets in again.
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.31')).statusCode).toBe(200)
      await lockName()
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.30')).statusCode).toBe(200)
      // 30 days after their last logins, home and the other address are refused like any other.
      s.clock.advance(30 * 86_400_000 + 1000)
      await lockName()
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.30')).statusCode).toBe(429)
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.31')).statusCode).toBe(429)
    })

    it("refusals of a locked-out address take nothing from the name's rate limit elsewhere", async () => {
      const s = await loginFixture(kind, { loginLockoutAttempts: 2, authIdentityRateLimit: 5 })
      // The clock stands still: the name's 5 logins a second are all there is.
      for (let i = 0; i < 2; i++) {
        expect((await s.passwordLogin('alice', WRONG, '198.51.100.5')).statusCode).toBe(401)
      }
      for (let i = 0; i < 10; i++) {
        expect((await s.passwordLogin('alice', WRONG, '198.51.100.5')).statusCode).toBe(429)
      }
      expect((await s.passwordLogin('alice', RIGHT, '192.0.2.40')).statusCode).toBe(200)
    })

    it('counts unknown user names too, so they cannot be told apart', async () => {
      const s = await loginFixture(kind, { loginLockoutAttempts: 3 })
      for (let i = 0; i < 3; i++) {
        expect((await s.passwordLogin('nobody', WRONG)).statusCode).toBe(401)
      }
      expect((await s.passwordLogin('nobody', WRONG)).statusCode).toBe(429)
    })

    it('tries every bearer token in order: a policy refusal of the first does not end the login', async () => {
      const s = await loginFixture(kind)
      const policy = await s.admin('POST', `${M}/auth-policies`, {
        name: 'password only',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: false } },
        secondary: { requireTotp: false, requireExtJwtSigner: null },
      })
      const bob = await s.admin('POST', `${M}/identities`, {
        name: 'bob',
        authPolicyId: policy.json().data.id,
      })
      const bobId = bob.json().data.id as string
      const res = await s.jwtLogin([await s.jwt(bobId), await s.jwt(s.alice)])
      expect(res.statusCode).toBe(200)
      expect(res.json().data.identityId).toBe(s.alice)
    })

    it("a password change ends the identity's other sessions, not the caller's own", async () => {
      const s = await loginFixture(kind)
      const one = (await s.passwordLogin('alice', RIGHT)).headers['zt-session'] as string
      const two = (await s.jwtLogin([await s.jwt(s.alice)])).headers['zt-session'] as string
      const admin = (await s.passwordLogin('admin', 'admin-password-123')).headers[
        'zt-session'
      ] as string
      const set = await s.app.inject({
        method: 'PUT',
        url: `${M}/identities/${s.alice}/password`,
        headers: { 'zt-session': admin },
        payload: { password: 'alice-password-2' },
      })
      expect(set.statusCode).toBe(200)
      const works = async (token: string) =>
        (
          await s.app.inject({
            method: 'GET',
            url: `${C}/current-api-session`,
            headers: { 'zt-session': token },
          })
        ).statusCode
      expect(await works(one)).toBe(401)
      expect(await works(two)).toBe(401)
      expect(await works(admin)).toBe(200)
      // An admin changing their own password keeps the session that made the change.
      const adminId = (
        await s.app.inject({
          method: 'GET',
          url: `${C}/current-api-session`,
          headers: { 'zt-session': admin },
        })
      ).json().data.identityId as string
      const other = (await s.passwordLogin('admin', 'admin-password-123')).headers[
        'zt-session'
      ] as string
      const own = await s.app.inject({
        method: 'PUT',
        url: `${M}/identities/${adminId}/password`,
        headers: { 'zt-session': admin },
        payload: { password: 'admin-password-456' },
      })
      expect(own.statusCode).toBe(200)
      expect(await works(admin)).toBe(200)
      expect(await works(other)).toBe(401)
    })
  })
})

describe.skipIf(!PG_URL)('brute force on a PostgreSQL cluster', () => {
  it('shares the failure count between instances', async () => {
    const dbPath = await freshPostgresUrl()
    const clock = testClock()
    const config = testConfig({ dbPath, dbPoolSize: 2, loginLockoutAttempts: 4 })
    const start = () => buildApp({ config, clock, logger: false, resolver: loopbackOnlyResolver })
    const a = await start()
    const b = await start()
    try {
      const attempt = (app: typeof a, password: string) =>
        app.inject({
          method: 'POST',
          url: `${M}/authenticate?method=password`,
          payload: { username: 'admin', password },
        })
      // Two failures on each instance: the fourth locks the name on both.
      for (const app of [a, b, a, b]) expect((await attempt(app, WRONG)).statusCode).toBe(401)
      expect((await attempt(a, 'admin-password-123')).statusCode).toBe(429)
      expect((await attempt(b, 'admin-password-123')).statusCode).toBe(429)
    } finally {
      await a.close()
      await b.close()
    }
  })
})
