import { describe, expect, it } from 'vitest'
import { forEachStore } from '../../helpers/app.js'
import { rulesSetup } from '../../helpers/token-rules.js'

forEachStore(() => {
  describe('token rules: audiences', () => {
    it('accepts a token whose aud holds only one of the extra audiences, and refuses another', async () => {
      const s = await rulesSetup({ audiences: ['account', 'ziti-tunnel'] })
      expect(await s.tryLogin({ aud: 'account' })).toBe(200)
      expect(await s.tryLogin({ aud: ['other', 'ziti-tunnel'] })).toBe(200)
      expect(await s.tryLogin({ aud: 'ziti' })).toBe(200) // the signer's own audience still counts
      expect(await s.tryLogin({ aud: 'somebody-else' })).toBe(401)
      expect((await s.explain(await s.token({ aud: 'somebody-else' }))).kind).toBe('audience')
    })

    it('refuses the extra audiences once the rules are cleared', async () => {
      const s = await rulesSetup({ audiences: ['account'] })
      expect(await s.tryLogin({ aud: 'account' })).toBe(200)
      const res = await s.call('PATCH', `/edge/management/v1/external-jwt-signers/${s.signerId}`, {
        tokenRules: null,
      })
      expect(res.statusCode).toBe(200)
      expect(await s.tryLogin({ aud: 'account' })).toBe(401)
    })
  })

  describe('token rules: claim conditions', () => {
    it('equals: passes on the value, fails on another value, a missing claim and a coerced type', async () => {
      const s = await rulesSetup({
        claims: [
          { claim: '/email_verified', equals: true },
          { claim: '/tier', equals: 3 },
        ],
      })
      expect(await s.tryLogin({ email_verified: true, tier: 3 })).toBe(200)
      expect(await s.tryLogin({ email_verified: false, tier: 3 })).toBe(401)
      expect(await s.tryLogin({ tier: 3 })).toBe(401) // missing
      expect(await s.tryLogin({ email_verified: 'true', tier: 3 })).toBe(401) // no coercion
      expect(await s.tryLogin({ email_verified: true, tier: '3' })).toBe(401)
    })

    it('equals on a string does not match a number, nor a number a string', async () => {
      const s = await rulesSetup({ claims: [{ claim: '/uid', equals: '42' }] })
      expect(await s.tryLogin({ uid: '42' })).toBe(200)
      expect(await s.tryLogin({ uid: 42 })).toBe(401)
    })

    it('oneOf: any listed value passes, others fail', async () => {
      const s = await rulesSetup({
        claims: [{ claim: '/azp', oneOf: ['ziti-tunnel', 'ziti-edge'] }],
      })
      expect(await s.tryLogin({ azp: 'ziti-edge' })).toBe(200)
      expect(await s.tryLogin({ azp: 'grafana' })).toBe(401)
      expect(await s.tryLogin({})).toBe(401)
    })

    it('contains: an element of an array claim, a word of a scope string', async () => {
      const s = await rulesSetup({
        claims: [
          { claim: '/groups', contains: 'ziti-users' },
          { claim: '/scope', contains: 'ziti' },
        ],
      })
      const scope = 'openid ziti profile'
      expect(await s.tryLogin({ groups: ['staff', 'ziti-users'], scope })).toBe(200)
      expect(await s.tryLogin({ groups: ['staff'], scope })).toBe(401)
      expect(await s.tryLogin({ groups: 'ziti-users-old', scope })).toBe(401)
      expect(await s.tryLogin({ groups: ['ziti-users'], scope: 'openid ziti-admin' })).toBe(401)
    })

    it('matches: a glob over the whole value with * and ?', async () => {
      const s = await rulesSetup({
        claims: [
          { claim: '/repository', matches: 'acme/*' },
          { claim: '/ref', matches: 'refs/heads/release-?' },
        ],
      })
      expect(await s.tryLogin({ repository: 'acme/deploy', ref: 'refs/heads/release-7' })).toBe(200)
      expect(await s.tryLogin({ repository: 'evil/acme/x', ref: 'refs/heads/release-7' })).toBe(401)
      expect(await s.tryLogin({ repository: 'acme/deploy', ref: 'refs/heads/release-10' })).toBe(
        401,
      )
      expect(await s.tryLogin({ repository: 7, ref: 'refs/heads/release-1' })).toBe(401)
    })

    it('matches stays fast on a pattern built to backtrack', async () => {
      const s = await rulesSetup({ claims: [{ claim: '/x', matches: `${'*a'.repeat(20)}b` }] })
      expect(await s.tryLogin({ x: 'a'.repeat(2000) })).toBe(401) // answers at all: no ReDoS
    })

    it('exists: true needs the claim, false refuses a token that has it; nested pointers', async () => {
      const s = await rulesSetup({
        claims: [
          { claim: '/realm_access/roles', exists: true },
          { claim: '/act', exists: false },
        ],
      })
      expect(await s.tryLogin({ realm_access: { roles: [] } })).toBe(200)
      expect(await s.tryLogin({ realm_access: {} })).toBe(401)
      expect(await s.tryLogin({ realm_access: { roles: [] }, act: { sub: 'x' } })).toBe(401)
    })

    it('explain-a-token names the failing condition and its message; login says only 401', async () => {
      const s = await rulesSetup({
        claims: [
          { claim: '/email_verified', equals: true },
          { claim: '/azp', oneOf: ['ziti-tunnel'], message: 'only the tunneler client' },
        ],
      })
      const jwt = await s.token({ email_verified: true, azp: 'grafana' })
      const data = await s.explain(jwt)
      expect(data).toMatchObject({
        accepted: false,
        kind: 'claim_condition',
        rule: 'tokenRules.claims[1]',
        ruleMessage: 'only the tunneler client',
        signerId: s.signerId,
      })
      const res = await s.loginWith(jwt)
      expect(res.statusCode).toBe(401)
      expect(res.body).not.toContain('tunneler')
      expect(res.headers['www-authenticate']).not.toContain('tunneler')
      const ok = await s.explain(await s.token({ email_verified: true, azp: 'ziti-tunnel' }))
      expect(ok).toMatchObject({ accepted: true, rule: null, ruleMessage: null })
    })
  })
})
