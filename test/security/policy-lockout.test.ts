import { describe, expect, it } from 'vitest'
import { forEachStore } from '../helpers/app.js'
import { loginFixture, M } from './fixture.js'

const RIGHT = 'alice-password-1'
const WRONG = 'not-the-password'
const updb = (extra: Record<string, unknown>) => ({
  name: 'strict',
  primary: {
    cert: { allowed: false },
    updb: { allowed: true, ...extra },
    extJwt: { allowed: true },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null },
})

/** The fixture with alice moved onto a policy that has these updb fields. */
async function withPolicy(
  kind: Parameters<typeof loginFixture>[0],
  extra: Record<string, unknown>,
) {
  const s = await loginFixture(kind)
  const created = await s.admin('POST', `${M}/auth-policies`, updb(extra))
  expect(created.statusCode).toBe(201)
  const policyId = created.json().data.id as string
  const moved = await s.admin('PATCH', `${M}/identities/${s.alice}`, { authPolicyId: policyId })
  expect(moved.statusCode).toBe(200)
  return { ...s, policyId }
}

forEachStore((kind) => {
  describe("brute force: the auth policy's maxAttempts and lockoutDurationMinutes", () => {
    it('are stored and returned, survive a PATCH of other fields, and refuse negatives', async () => {
      const s = await withPolicy(kind, { maxAttempts: 3, lockoutDurationMinutes: 5 })
      const read = await s.admin('GET', `${M}/auth-policies/${s.policyId}`)
      expect(read.json().data.primary.updb).toMatchObject({
        maxAttempts: 3,
        lockoutDurationMinutes: 5,
      })
      const patched = await s.admin('PATCH', `${M}/auth-policies/${s.policyId}`, {
        primary: { updb: { requireNumberChar: true } },
      })
      expect(patched.statusCode).toBe(200)
      const again = await s.admin('GET', `${M}/auth-policies/${s.policyId}`)
      expect(again.json().data.primary.updb).toMatchObject({
        maxAttempts: 3,
        lockoutDurationMinutes: 5,
        requireNumberChar: true,
      })
      for (const bad of [{ maxAttempts: -1 }, { lockoutDurationMinutes: -1 }]) {
        const res = await s.admin('POST', `${M}/auth-policies`, { ...updb(bad), name: 'bad' })
        expect(res.statusCode).toBe(400)
      }
    })

    it('maxAttempts failures lock the user name for lockoutDurationMinutes', async () => {
      const s = await withPolicy(kind, { maxAttempts: 3, lockoutDurationMinutes: 5 })
      for (let i = 0; i < 3; i++) {
        expect((await s.passwordLogin('alice', WRONG, `203.0.113.${i}`)).statusCode).toBe(401)
      }
      const locked = await s.passwordLogin('alice', RIGHT)
      expect(locked.statusCode).toBe(429)
      expect(locked.json().error.code).toBe('RATE_LIMITED')
      expect(locked.headers['retry-after']).toBe('300')
      s.clock.advance(299_000)
      expect((await s.passwordLogin('alice', RIGHT)).statusCode).toBe(429)
      s.clock.advance(1000)
      expect((await s.passwordLogin('alice', RIGHT)).statusCode).toBe(200)
    })

    it('a lockout of 0 minutes keeps the default growing interval from maxAttempts on', async () => {
      const s = await withPolicy(kind, { maxAttempts: 2, lockoutDurationMinutes: 0 })
      for (let i = 0; i < 2; i++) {
        expect((await s.passwordLogin('alice', WRONG)).statusCode).toBe(401)
      }
      const locked = await s.passwordLogin('alice', RIGHT)
      expect(locked.statusCode).toBe(429)
      expect(locked.headers['retry-after']).toBe('1')
      s.clock.advance(1000)
      expect((await s.passwordLogin('alice', WRONG)).statusCode).toBe(401)
      expect((await s.passwordLogin('alice', RIGHT)).headers['retry-after']).toBe('2')
    })

    it('maxAttempts 0 keeps the defaults (10 failures)', async () => {
      const s = await withPolicy(kind, { maxAttempts: 0, lockoutDurationMinutes: 5 })
      for (let i = 0; i < 9; i++) {
        expect((await s.passwordLogin('alice', WRONG)).statusCode).toBe(401)
      }
      expect((await s.passwordLogin('alice', RIGHT)).statusCode).toBe(200)
    })
  })
})
