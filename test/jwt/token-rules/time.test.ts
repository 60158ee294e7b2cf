import { describe, expect, it } from 'vitest'
import { forEachStore } from '../../helpers/app.js'
import { rulesSetup } from '../../helpers/token-rules.js'

const M = '/edge/management/v1'
const at = (iso: string) => Math.floor(Date.parse(iso) / 1000)
const NOW = at('2026-11-22T08:00:00.000Z')

forEachStore(() => {
  describe('token rules: lifetime and age', () => {
    it('maxTokenLifetime refuses exp - iat over the cap and a token without iat', async () => {
      const s = await rulesSetup({ maxTokenLifetime: '10m' })
      expect(await s.tryLogin({ iat: NOW, exp: NOW + 600 })).toBe(200)
      expect(await s.tryLogin({ iat: NOW, exp: NOW + 601 })).toBe(401)
      expect(await s.tryLogin({ iat: undefined, exp: NOW + 60 })).toBe(401)
      const data = await s.explain(await s.token({ iat: NOW, exp: NOW + 3600 }))
      expect(data).toMatchObject({ kind: 'token_lifetime', rule: 'tokenRules.maxTokenLifetime' })
      expect((await s.explain(await s.token({ iat: undefined }))).kind).toBe('token_lifetime')
    })

    it('maxTokenAge refuses an old iat, and counts from auth_time when the token has one', async () => {
      const s = await rulesSetup({ maxTokenAge: '5m' })
      expect(await s.tryLogin({ iat: NOW - 300 })).toBe(200)
      expect(await s.tryLogin({ iat: NOW - 400 })).toBe(401)
      expect(await s.tryLogin({ iat: NOW, auth_time: NOW - 400 })).toBe(401)
      expect(await s.tryLogin({ iat: NOW - 400, auth_time: NOW - 60 })).toBe(200)
      expect(await s.tryLogin({ iat: undefined })).toBe(401)
      expect((await s.explain(await s.token({ iat: NOW - 400 }))).kind).toBe('token_age')
    })

    it('a token accepted on the secondary factor is refused once older than maxTokenAge', async () => {
      const s = await rulesSetup({ maxTokenAge: '2m' })
      const policy = await s.call('POST', `${M}/auth-policies`, {
        name: 'needs jwt',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
        secondary: { requireTotp: false, requireExtJwtSigner: s.signerId },
      })
      const policyId = policy.json().data.id as string
      await s.call('PATCH', `${M}/identities/${s.identityId}`, { authPolicyId: policyId })
      await s.call('PUT', `${M}/identities/${s.identityId}/password`, {
        password: 'alice-password-12',
      })
      const jwt = await s.token()
      const auth = await s.app.inject({
        method: 'POST',
        url: `${M}/authenticate?method=password`,
        payload: { username: 'alice', password: 'alice-password-12' },
      })
      const session = auth.headers['zt-session'] as string
      const me = () =>
        s.app.inject({
          method: 'GET',
          url: '/edge/client/v1/current-identity',
          headers: { 'zt-session': session, authorization: `Bearer ${jwt}` },
        })
      expect((await me()).statusCode).toBe(200)
      s.clock.advance(60_000)
      expect((await me()).statusCode).toBe(200) // from the verified-token cache
      s.clock.advance(60_000) // at 2m exactly (no leeway by default): still accepted
      expect((await me()).statusCode).toBe(200)
      s.clock.advance(1000)
      const late = await me()
      expect(late.statusCode).toBe(401)
      expect(late.headers['www-authenticate']).toContain('openziti-secondary-ext-jwt')
    })
  })

  describe('token rules: per-signer clock skew', () => {
    it('a wider skew than the global one accepts a token expired a little while ago', async () => {
      const wide = await rulesSetup({ clockSkew: '2m' }, { config: { jwtClockToleranceMs: 0 } })
      expect(await wide.tryLogin({ iat: NOW - 600, exp: NOW - 60 })).toBe(200)
      expect(await wide.tryLogin({ iat: NOW - 600, exp: NOW - 180 })).toBe(401)
      expect(await wide.tryLogin({ nbf: NOW + 60 })).toBe(200)
    })

    it('a narrower skew than the global one refuses what the global one would accept', async () => {
      const config = { jwtClockToleranceMs: 120_000 }
      const narrow = await rulesSetup({ clockSkew: '0s' }, { config })
      expect(await narrow.tryLogin({ iat: NOW - 600, exp: NOW - 60 })).toBe(401)
      expect(await narrow.tryLogin({ nbf: NOW + 60 })).toBe(401)
      const global = await rulesSetup(null, { config })
      expect(await global.tryLogin({ iat: NOW - 600, exp: NOW - 60 })).toBe(200)
    })

    it('the skew widens maxTokenAge too', async () => {
      const s = await rulesSetup({ maxTokenAge: '5m', clockSkew: '1m' })
      expect(await s.tryLogin({ iat: NOW - 350 })).toBe(200)
      expect(await s.tryLogin({ iat: NOW - 370 })).toBe(401)
    })
  })

  describe('time claims out of range', () => {
    it('refuses exp, nbf, iat or auth_time beyond year 9999 or not finite, with a 401 (never a 500)', async () => {
      const s = await rulesSetup({ sessionEndsWithToken: true, maxTokenAge: '1h' })
      const status = async (members: string) =>
        (await s.loginWith(await s.rawToken(members))).statusCode
      // The last second of year 9999 is a time; the session still ends by its idle timeout.
      expect(await status(`"iat":${NOW},"exp":253402300799`)).toBe(200)
      for (const [members, claim] of [
        [`"iat":${NOW},"exp":1e400`, 'exp'], // JSON reads it as Infinity
        [`"iat":${NOW},"exp":1e15`, 'exp'],
        [`"iat":${NOW},"exp":253402300800`, 'exp'],
        [`"iat":${NOW},"exp":${NOW + 60},"nbf":-1e400`, 'nbf'],
        [`"iat":-1e400,"exp":${NOW + 60}`, 'iat'],
        [`"iat":${NOW},"exp":${NOW + 60},"auth_time":1e400`, 'auth_time'],
      ] as const) {
        expect(await status(members), members).toBe(401)
        // Refused for the range itself, not by another rule that happens to catch it.
        const data = await s.explain(await s.rawToken(members))
        expect(data, members).toMatchObject({ accepted: false, kind: 'malformed' })
        expect(String(data.reason), members).toContain(`${claim} out of range`)
      }
    })

    it('refuses, under maxTokenAge, a token whose auth_time is in the future', async () => {
      const s = await rulesSetup({ maxTokenAge: '5m' })
      expect(await s.tryLogin({ iat: NOW, auth_time: NOW })).toBe(200)
      expect(await s.tryLogin({ iat: NOW, auth_time: NOW + 20 })).toBe(401) // no leeway by default
      expect(await s.tryLogin({ iat: NOW, auth_time: NOW + 3600 })).toBe(401)
      const data = await s.explain(await s.token({ iat: NOW, auth_time: NOW + 3600 }))
      expect(data).toMatchObject({ kind: 'token_age' })
    })
  })

  describe('token rules: sessions that end with the token', () => {
    it('caps the session at exp however often it is used, then refuses it', async () => {
      const s = await rulesSetup({ sessionEndsWithToken: true })
      const exp = NOW + 300
      const res = await s.loginWith(await s.token({ exp }))
      expect(res.statusCode).toBe(200)
      const session = res.headers['zt-session'] as string
      const expiresAt = Date.parse(res.json().data.expiresAt as string)
      expect(expiresAt).toBeLessThanOrEqual(exp * 1000)
      const current = () =>
        s.app.inject({
          method: 'GET',
          url: '/edge/client/v1/current-api-session',
          headers: { 'zt-session': session },
        })
      for (let i = 0; i < 4; i++) {
        s.clock.advance(60_000)
        const r = await current()
        expect(r.statusCode).toBe(200)
        expect(Date.parse(r.json().data.expiresAt as string)).toBeLessThanOrEqual(exp * 1000)
      }
      s.clock.advance(61_000) // past exp
      expect((await current()).statusCode).toBe(401)
    })

    it('without the rule a session slides past the token expiry', async () => {
      const s = await rulesSetup({ maxTokenAge: '1h' })
      const res = await s.loginWith(await s.token({ exp: NOW + 60 }))
      const session = res.headers['zt-session'] as string
      s.clock.advance(120_000)
      const r = await s.app.inject({
        method: 'GET',
        url: '/edge/client/v1/current-api-session',
        headers: { 'zt-session': session },
      })
      expect(r.statusCode).toBe(200)
    })
  })
})
