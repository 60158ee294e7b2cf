import { describe, expect, it } from 'vitest'
import { caller, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { buildMeteredApp } from './scrape.js'

const M = '/edge/management/v1'
const ISSUER = 'https://bounded.example'

forEachStore(() => {
  describe('label sets under a flood of distinct bad requests', () => {
    it('stay bounded over 1,000 distinct bad tokens and 1,000 unknown URLs, and hold none of them', async () => {
      const cert = await makeCert()
      const clock = testClock()
      const s = await buildMeteredApp({ clock })
      const session = await login(s.app)
      await caller(s.app, session)('POST', `${M}/external-jwt-signers`, {
        name: 'bounded',
        enabled: true,
        issuer: ISSUER,
        audience: 'ziti',
        certPem: cert.certPem,
        kid: 'k1',
      })
      const tokens = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => {
          if (i % 4 === 0) return `garbage.${i}.token-${i}`
          const claims = { iss: i % 4 === 1 ? `https://idp-${i}.example` : ISSUER, aud: 'ziti' }
          return signJwt(
            cert.privateKey,
            { ...claims, sub: `user-${i}` },
            { kid: i % 4 === 2 ? `kid-${i}` : 'k1', now: clock() },
          )
        }),
      )
      const urls = Array.from({ length: 1000 }, (_, i) =>
        i % 2 === 0 ? `/edge/management/v1/no-such-${i}?q=${i}` : `${M}/identities/ident-${i}`,
      )
      const flood = async (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          await s.app.inject({
            method: 'POST',
            url: '/edge/client/v1/authenticate?method=ext-jwt',
            headers: { authorization: `Bearer ${tokens[i]}` },
          })
          await s.app.inject({ method: 'GET', url: urls[i] as string })
          // Fewer of these: each costs a deliberate scrypt.
          if (i % 20 !== 0) continue
          await s.app.inject({
            method: 'POST',
            url: `${M}/authenticate?method=password`,
            payload: { username: `user-${i}`, password: `password-${i}-xxxxx` },
          })
        }
      }
      const series = async () => {
        const scraped = await s.scrape()
        return scraped.samples.filter((x) => x.name.startsWith('ctrl_'))
      }

      // Every kind of refusal once, then the rest of the flood: no new series.
      await flood(0, 21)
      const before = await series()
      await flood(21, 1000)
      const after = await series()
      expect(after.map((x) => JSON.stringify([x.name, x.labels])).sort()).toEqual(
        before.map((x) => JSON.stringify([x.name, x.labels])).sort(),
      )
      expect(after.length).toBeLessThan(150)
      const failures = after.filter(
        (x) => x.name === 'ctrl_logins_total' && x.labels.result === 'failure',
      )
      expect(failures.reduce((n, x) => n + x.value, 0)).toBe(1000 + 50)
      const values = new Set(after.flatMap((x) => Object.values(x.labels)))
      for (const secret of [...tokens, session, 'user-', 'password-', 'no-such', 'ident-'])
        for (const v of values) expect(v.includes(secret)).toBe(false)
      expect(after.find((x) => x.name === 'ctrl_verified_token_cache_entries')?.value).toBe(0)
    }, 60_000)
  })
})
