import { beforeAll, describe, expect, it } from 'vitest'
import { ChangeBus } from '../../src/changes.js'
import { ExternalJwtVerifier } from '../../src/jwt/authenticate.js'
import { JwksFetcher } from '../../src/jwt/jwks-fetch.js'
import { SignerKeys } from '../../src/jwt/signer-keys.js'
import { VerifiedTokenCache } from '../../src/jwt/verified-cache.js'
import { SignerService } from '../../src/signers/signer-service.js'
import { testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { identityRecord } from '../helpers/records.js'
import { openTestStore } from '../helpers/stores.js'

let cert: TestCert
beforeAll(async () => {
  cert = await makeCert()
})

const entry = (i: number, expiresAtMs = Number.MAX_SAFE_INTEGER) => ({
  signerId: `s${i % 3}`,
  identityId: `i${i % 5}`,
  kid: 'k',
  exp: Math.floor(expiresAtMs / 1000),
  expiresAtMs,
})

describe('VerifiedTokenCache', () => {
  it('stays within its bound under a flood of distinct tokens, dropping the least recently used', () => {
    const cache = new VerifiedTokenCache(() => new Date(), 100)
    for (let i = 0; i < 10_000; i++) cache.set(VerifiedTokenCache.key(`token-${i}`), entry(i))
    expect(cache.size).toBe(100)
    expect(cache.get(VerifiedTokenCache.key('token-0'))).toBeUndefined()
    expect(cache.get(VerifiedTokenCache.key('token-9999'))).toBeDefined()
  })

  it('evicts in least-recently-used order across many evictions, reads counting as use', () => {
    const cache = new VerifiedTokenCache(() => new Date(), 3)
    for (const k of ['a', 'b', 'c']) cache.set(k, entry(0))
    expect(cache.get('a')).toBeDefined() // b is now the least recently used
    cache.set('d', entry(0))
    expect(['a', 'b', 'c', 'd'].filter((k) => cache.get(k))).toEqual(['a', 'c', 'd'])
    // The reads above used a, c and d in that order: a goes next, then c.
    cache.set('e', entry(0))
    cache.set('f', entry(0))
    expect(['a', 'c', 'd', 'e', 'f'].filter((k) => cache.get(k))).toEqual(['d', 'e', 'f'])
    // Reading the newest entry keeps the order; reading another moves it past the newest.
    cache.clear()
    for (const k of ['p', 'q', 'r']) cache.set(k, entry(0))
    expect(cache.get('r')).toBeDefined()
    cache.set('s', entry(0)) // p goes
    expect(cache.get('q')).toBeDefined()
    cache.set('t', entry(0)) // r goes: q was read after it
    expect(['p', 'q', 'r', 's', 't'].filter((k) => cache.get(k))).toEqual(['q', 's', 't'])
    cache.clear()
    for (let i = 0; i < 1000; i++) cache.set(`x${i}`, entry(0))
    expect(['x996', 'x997', 'x998', 'x999'].filter((k) => cache.get(k))).toEqual([
      'x997',
      'x998',
      'x999',
    ])
  })

  it('ends entries at their expiry and forgets by signer, identity or all', () => {
    const clock = testClock()
    const cache = new VerifiedTokenCache(clock)
    cache.set('a', entry(0, clock().getTime() + 1000))
    expect(cache.get('a')).toBeDefined()
    clock.advance(1000)
    expect(cache.get('a')).toBeUndefined()
    for (let i = 0; i < 15; i++) cache.set(`k${i}`, entry(i))
    cache.dropSigner('s0')
    expect(cache.size).toBe(10)
    cache.dropIdentity('i1')
    expect(
      [...Array(15).keys()]
        .filter((i) => cache.get(`k${i}`))
        .every((i) => i % 3 !== 0 && i % 5 !== 1),
    ).toBe(true)
    cache.clear()
    expect(cache.size).toBe(0)
  })

  it('forgets the tokens of retired kids and never stores one whose kid is gone', () => {
    const live = new Set(['s0/k', 's1/k'])
    const cache = new VerifiedTokenCache(testClock(), 100, (s, kid) => live.has(`${s}/${kid}`))
    for (let i = 0; i < 6; i++) cache.set(`k${i}`, entry(i))
    expect(cache.size).toBe(4) // s2 holds no kid k
    cache.dropKids('s0', ['k', 'other'])
    expect(cache.size).toBe(2)
    expect(cache.get('k1')).toBeDefined()
    cache.dropKids('s1', ['other'])
    expect(cache.size).toBe(2)
  })

  it('keys by a hash, never the token itself', () => {
    const key = VerifiedTokenCache.key('header.payload.signature')
    expect(key).not.toContain('payload')
    expect(key).toHaveLength(43)
  })
})

describe('ExternalJwtVerifier', () => {
  it('verifies a repeated token once and answers the repeats from the cache', async () => {
    const clock = testClock()
    const store = await openTestStore('sqlite')
    const signers = new SignerService({ store, changes: new ChangeBus(), clock })
    const signer = await signers.create({
      name: 's',
      enabled: true,
      issuer: 'https://i',
      audience: 'a',
      certPem: cert.certPem,
      kid: 'k1',
    })
    const identities = store.repos.identities
    const alice = identityRecord('alice', clock().toISOString())
    await store.transaction((tx) => tx.identities.insert(alice))
    const fetcher = new JwksFetcher({
      policy: { allowHttp: true, blockPrivate: false },
      timeoutMs: 1000,
    })
    const keys = new SignerKeys({
      fetcher,
      clock,
      cooldownMs: 0,
      maxAgeMs: 60_000,
      log: { info: () => {}, warn: () => {} },
    })
    keys.load([signer])
    const verifier = new ExternalJwtVerifier(
      keys,
      {
        byId: (id) => identities.get(id),
        byExternalId: (e) => identities.getByExternalId(e),
        policy: (id) => store.repos.policies.get(id),
        stale: () => false,
      },
      { clock, clockToleranceMs: 0 },
      new VerifiedTokenCache(clock),
    )
    const token = await signJwt(
      cert.privateKey,
      { iss: 'https://i', aud: 'a', sub: 'alice' },
      { kid: 'k1', now: clock() },
    )
    for (let i = 0; i < 5; i++) {
      expect((await verifier.secondary([token], alice, signer.id)).met).toBe(true)
    }
    expect(verifier.stats).toEqual({ verified: 1, cacheHits: 4 })
    await fetcher.close()
    await store.close()
  })
})
