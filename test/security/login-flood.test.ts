import { describe, expect, it } from 'vitest'
import { forEachStore } from '../helpers/app.js'
import { C, loginFixture, M } from './fixture.js'

forEachStore((kind) => {
  describe('one valid credential has a bounded cost (login flood)', () => {
    it('leaves at most CTRL_MAX_SESSIONS_PER_IDENTITY live sessions, the oldest ended first', async () => {
      const s = await loginFixture(kind, { maxSessionsPerIdentity: 5 })
      const token = await s.jwt(s.alice)
      const first = await s.jwtLogin([token])
      expect(first.statusCode).toBe(200)
      const firstSession = first.headers['zt-session'] as string
      // 60 logins with the one token, 20 at a time (group commits of several logins each).
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => s.jwtLogin([token])))
        expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200))
      }
      expect(await s.store.repos.sessions.countForIdentity(s.alice)).toBe(5)
      // The oldest session was ended: its token no longer works.
      const old = await s.app.inject({
        method: 'GET',
        url: `${C}/current-api-session`,
        headers: { 'zt-session': firstSession },
      })
      expect(old.statusCode).toBe(401)
      // The newest works.
      const last = await s.jwtLogin([token])
      const current = await s.app.inject({
        method: 'GET',
        url: `${C}/current-api-session`,
        headers: { 'zt-session': last.headers['zt-session'] as string },
      })
      expect(current.statusCode).toBe(200)
    })

    it('with the default limits, 200 logins with one JWT make at most 5 sessions and 5 audit rows', async () => {
      const { DEFAULT_CONFIG } = await import('../../src/config.js')
      const s = await loginFixture(kind, {
        authRateLimit: DEFAULT_CONFIG.authRateLimit,
        authIdentityRateLimit: DEFAULT_CONFIG.authIdentityRateLimit,
      })
      s.clock.advance(1000) // the setup's admin login is regained
      const token = await s.jwt(s.alice)
      const count = async () =>
        (await s.admin('GET', `${M}/audit-events?limit=1`)).json().meta.pagination.totalCount
      const before = await count()
      // From many addresses, so only the per-identity limit can stop them.
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => s.jwtLogin([token], C, `10.0.${i >> 8}.${i & 255}`)),
      )
      const ok = answers.filter((a) => a.statusCode === 200).length
      const limited = answers.filter((a) => a.statusCode === 429)
      expect(ok).toBe(DEFAULT_CONFIG.authIdentityRateLimit)
      expect(limited).toHaveLength(200 - ok)
      expect(limited[0]?.json().error.code).toBe('RATE_LIMITED')
      expect(limited[0]?.headers['retry-after']).toBe('1')
      // Refusals are counted in metrics, not stored: the audit trail grew by the logins only.
      expect((await count()) - before).toBe(ok)
      expect(await s.store.repos.sessions.countForIdentity(s.alice)).toBe(ok)
    })

    it('one limiter per client address serves both API prefixes', async () => {
      const s = await loginFixture(kind, { authRateLimit: 2 })
      s.clock.advance(1000)
      const addr = '192.0.2.7'
      expect((await s.passwordLogin('alice', 'alice-password-1', addr, M)).statusCode).toBe(200)
      expect((await s.passwordLogin('alice', 'alice-password-1', addr, C)).statusCode).toBe(200)
      const third = await s.passwordLogin('alice', 'alice-password-1', addr, C)
      expect(third.statusCode).toBe(429)
      expect((await s.passwordLogin('alice', 'alice-password-1', addr, M)).statusCode).toBe(429)
      // Another address has its own allowance; a second later this one is regained.
      expect((await s.passwordLogin('alice', 'alice-password-1', '192.0.2.8', M)).statusCode).toBe(
        200,
      )
      s.clock.advance(1000)
      expect((await s.passwordLogin('alice', 'alice-password-1', addr, M)).statusCode).toBe(200)
    })

    it('limits one user name across addresses (a token bucket: half a second regains one)', async () => {
      const s = await loginFixture(kind, { authIdentityRateLimit: 2 })
      s.clock.advance(1000)
      const from = (i: number) => s.passwordLogin('alice', 'alice-password-1', `198.51.100.${i}`)
      expect((await from(1)).statusCode).toBe(200)
      expect((await from(2)).statusCode).toBe(200)
      expect((await from(3)).statusCode).toBe(429)
      s.clock.advance(500)
      expect((await from(4)).statusCode).toBe(200)
      expect((await from(5)).statusCode).toBe(429)
    })
  })
})

describe('the client address behind a load balancer (CTRL_TRUST_PROXY)', () => {
  const behind = (
    s: Awaited<ReturnType<typeof loginFixture>>,
    forwardedFor: string,
    remoteAddress = '10.0.0.5',
  ) =>
    s.app.inject({
      method: 'POST',
      url: `${M}/authenticate?method=password`,
      remoteAddress,
      headers: { 'x-forwarded-for': forwardedFor },
      payload: { username: 'alice', password: 'alice-password-1' },
    })

  it('counts each client the balancer names apart, and records its address on the session', async () => {
    const s = await loginFixture('sqlite', { authRateLimit: 1, trustProxy: ['10.0.0.0/24'] })
    s.clock.advance(1000)
    const first = await behind(s, '192.0.2.1')
    expect(first.statusCode).toBe(200)
    expect(first.json().data.ipAddress).toBe('192.0.2.1')
    const second = await behind(s, '203.0.113.50, 192.0.2.2')
    expect(second.statusCode).toBe(200)
    // The balancer appended the address it saw; what the client wrote before it is not believed.
    expect(second.json().data.ipAddress).toBe('192.0.2.2')
    // The same client again, through the same balancer: its own allowance is spent.
    expect((await behind(s, '192.0.2.1')).statusCode).toBe(429)
  })

  it('counts a forwarded value that is not an IP address by the connection, not as a bucket of its own', async () => {
    const s = await loginFixture('sqlite', { authRateLimit: 1, trustProxy: ['10.0.0.0/24'] })
    s.clock.advance(1000)
    const first = await behind(s, 'not-an-address-1')
    expect(first.statusCode).toBe(200)
    expect(first.json().data.ipAddress).toBe('10.0.0.5') // the session records the peer too
    expect((await behind(s, 'not-an-address-2')).statusCode).toBe(429) // the balancer's 10.0.0.5
    expect((await behind(s, '192.0.2.1')).statusCode).toBe(200) // a real client has its own
  })

  it('ignores X-Forwarded-For from any other hop, so a client cannot pick its own address', async () => {
    const trusted = await loginFixture('sqlite', { authRateLimit: 1, trustProxy: ['10.0.0.5'] })
    const none = await loginFixture('sqlite', { authRateLimit: 1 })
    for (const s of [trusted, none]) {
      s.clock.advance(1000)
      // Straight from 203.0.113.9 (not a trusted balancer), claiming two addresses in turn.
      expect((await behind(s, '192.0.2.1', '203.0.113.9')).statusCode).toBe(200)
      expect((await behind(s, '192.0.2.2', '203.0.113.9')).statusCode).toBe(429)
    }
  })
})
