import { X509Certificate } from 'node:crypto'
import { beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { JwksFetcher } from '../../src/jwt/jwks-fetch.js'
import { type SignerKeys, SignerKeys as SignerKeysClass } from '../../src/jwt/signer-keys.js'
import { VerifiedTokenCache } from '../../src/jwt/verified-cache.js'
import { JwtRejected, verifyExternalJwt } from '../../src/jwt/verify.js'
import type { SignerRecord } from '../../src/store/contract.js'
import { testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { signerRecord } from '../helpers/records.js'
import { testServices } from '../helpers/services.js'
import { openTestStore } from '../helpers/stores.js'

const NOW = '2026-11-22T08:00:00.000Z'

let first: TestCert
let second: TestCert
beforeAll(async () => {
  ;[first, second] = await Promise.all([makeCert(), makeCert()])
})

async function refusal(p: Promise<unknown>): Promise<JwtRejected> {
  try {
    await p
  } catch (err) {
    if (err instanceof JwtRejected) return err
    throw err
  }
  throw new Error('the token was accepted')
}

describe('VerifiedTokenCache generation', () => {
  const entry = { signerId: 's', identityId: 'i', kid: 'k', exp: 0, expiresAtMs: 8e15 }

  it('refuses to remember a verification that began before a drop of its signer, keys or identity', () => {
    const cache = new VerifiedTokenCache(() => new Date())
    const drops: ((c: VerifiedTokenCache) => void)[] = [
      (c) => c.dropSigner('s'),
      (c) => c.dropKids('s', ['k']),
      (c) => c.dropIdentity('i'),
      (c) => c.clear(),
    ]
    for (const drop of drops) {
      const since = cache.generation
      drop(cache)
      cache.dropIdentity('someone else') // later drops of others do not hide it
      cache.set('key', entry, since)
      expect(cache.get('key')).toBeUndefined()
      cache.set('key', entry, cache.generation)
      expect(cache.get('key')).toEqual(entry)
      cache.clear()
    }
  })

  it('remembers it past drops of other signers and identities, unless too many to tell', () => {
    const cache = new VerifiedTokenCache(() => new Date())
    let since = cache.generation
    cache.dropSigner('other')
    cache.dropKids('other', ['k'])
    cache.dropIdentity('someone else')
    cache.set('key', entry, since)
    expect(cache.get('key')).toEqual(entry)
    since = cache.generation
    for (let i = 0; i < 65; i++) cache.dropIdentity(`enrolled-${i}`)
    cache.set('other key', entry, since)
    expect(cache.get('other key')).toBeUndefined()
  })
})

describe('a change while a token is being checked', () => {
  async function setup(config: Parameters<typeof testServices>[2] = {}) {
    const store = await openTestStore('sqlite')
    onTestFinished(() => store.close())
    const clock = testClock(NOW)
    const services = await testServices(store, clock, config)
    const alice = await services.identities.create({ name: 'alice' })
    return { services, clock, alice }
  }

  it('does not remember a token checked with the certificate a PATCH replaced meanwhile', async () => {
    const { services, clock, alice } = await setup()
    const signer = await services.signers.create({
      name: 'rotating',
      enabled: true,
      issuer: 'https://rotating.example',
      audience: 'ziti',
      certPem: first.certPem,
      kid: 'k1',
    })
    const claims = { iss: 'https://rotating.example', aud: 'ziti', sub: alice.id }
    const old = await signJwt(first.privateKey, claims, { kid: 'k1', now: clock() })
    // The check has read the signer and waits for its signature when the certificate is replaced
    // (same kid), as a PATCH through this instance replaces it.
    const inFlight = services.verifier.authenticate([old])
    const rotated: SignerRecord = {
      ...signer,
      certPem: second.certPem,
      updatedAt: '2026-11-22T08:00:01.000Z',
    }
    services.changes.emit({
      entity: 'signer',
      op: 'upsert',
      id: signer.id,
      remote: false,
      record: rotated,
    })
    // It began before the change: it answers as the signer was then.
    expect((await inFlight).identity.id).toBe(alice.id)
    // It is not remembered: the same token now meets the new certificate, and fails.
    const again = await refusal(services.verifier.authenticate([old]))
    expect(again.kind).toBe('bad_signature')
    // A token of the new key is remembered as before.
    const fresh = await signJwt(second.privateKey, claims, { kid: 'k1', now: clock() })
    const before = services.verifier.stats.cacheHits
    for (let i = 0; i < 3; i++) await services.verifier.authenticate([fresh])
    expect(services.verifier.stats.cacheHits).toBe(before + 2)
  })

  it('does not remember a token whose identity changed on another instance during its check', async () => {
    const { services, clock, alice } = await setup()
    await services.signers.create({
      name: 'plain',
      enabled: true,
      issuer: 'https://plain.example',
      audience: 'ziti',
      certPem: first.certPem,
      kid: 'k1',
    })
    const token = await signJwt(
      first.privateKey,
      { iss: 'https://plain.example', aud: 'ziti', sub: alice.id },
      { kid: 'k1', now: clock() },
    )
    const inFlight = services.verifier.authenticate([token])
    // Another instance's notification that alice changed (her externalId, say), arriving while
    // the signature is being checked: what the check read of her may be out of date.
    services.changes.emit({ entity: 'identity', op: 'upsert', id: alice.id, remote: true })
    expect((await inFlight).identity.id).toBe(alice.id)
    expect(services.verifier.stats).toEqual({ verified: 1, cacheHits: 0 })
    // Checked afresh, then remembered.
    await services.verifier.authenticate([token])
    await services.verifier.authenticate([token])
    expect(services.verifier.stats).toEqual({ verified: 2, cacheHits: 1 })
  })

  it("ends a remembered token with the certificate, by the signer's own clockSkew", async () => {
    const notAfter = new Date(Date.parse(NOW) + 60_000)
    const short = await makeCert({ notAfter })
    const { services, clock, alice } = await setup({ jwtClockToleranceMs: 30_000 })
    await services.signers.create({
      name: 'strict',
      enabled: true,
      issuer: 'https://strict.example',
      audience: 'ziti',
      certPem: short.certPem,
      kid: 'k1',
      tokenRules: { clockSkew: '0s' },
    })
    const token = await signJwt(
      short.privateKey,
      { iss: 'https://strict.example', aud: 'ziti', sub: alice.id },
      { kid: 'k1', now: clock() },
    )
    for (let i = 0; i < 2; i++) await services.verifier.authenticate([token])
    expect(services.verifier.stats.cacheHits).toBe(1)
    // Ten seconds past the certificate's end: within the controller's 30 s tolerance, not the
    // signer's 0 s, which a fresh check applies. The remembered verification ends with it.
    clock.set(new Date(notAfter.getTime() + 10_000).toISOString())
    const late = await refusal(services.verifier.authenticate([token]))
    expect(late.kind).toBe('unknown_kid')
    expect(late.reason).toMatch(/validity/)
  })
})

describe('SignerKeys rereads', () => {
  /** A stored signer as another instance left it, read through a source the test controls. */
  function setup() {
    const stored = new Map<string, SignerRecord>()
    const calls = { byId: 0, byIssuer: 0 }
    let failing = false
    const held: { id: string; release: () => void }[] = []
    let holding = false
    const source = {
      async byId(id: string) {
        calls.byId++
        const snapshot = stored.get(id)
        if (holding) await new Promise<void>((release) => held.push({ id, release }))
        if (failing) throw new Error('timeout exceeded when trying to connect')
        return snapshot
      },
      async byIssuer(issuer: string) {
        calls.byIssuer++
        if (failing) throw new Error('timeout exceeded when trying to connect')
        return [...stored.values()].find((s) => s.issuer === issuer)
      },
      async all() {
        if (failing) throw new Error('timeout exceeded when trying to connect')
        return [...stored.values()]
      },
      stale: () => false,
    }
    const fetcher = new JwksFetcher({
      policy: { allowHttp: true, blockPrivate: false },
      timeoutMs: 1000,
    })
    const warnings: string[] = []
    const keys: SignerKeys = new SignerKeysClass({
      source,
      fetcher,
      clock: testClock(NOW),
      cooldownMs: 60_000,
      maxAgeMs: 60_000,
      log: { info: () => {}, warn: (_obj, msg) => warnings.push(msg) },
    })
    onTestFinished(async () => {
      keys.close()
      await fetcher.close()
    })
    // One signer, stored and known to this instance.
    const v1 = signerRecord('s1', 'default', NOW)
    stored.set(v1.id, v1)
    keys.load([v1])
    return {
      v1,
      stored,
      calls,
      keys,
      warnings,
      held,
      fail: (on: boolean) => {
        failing = on
      },
      hold: (on: boolean) => {
        holding = on
      },
    }
  }

  it('rereads a signer at every lookup while its reread after a change failed, until a retry succeeds', async () => {
    const t = setup()
    const signer = t.v1
    // Another instance disables it; this instance's reread of it fails.
    t.stored.set(signer.id, { ...signer, enabled: false, updatedAt: '2026-11-22T08:00:05.000Z' })
    t.fail(true)
    await t.keys.reload(signer.id)
    expect(t.warnings).toContain('signer reread failed; lookups read the store until it succeeds')
    // A lookup meanwhile cannot trust what it holds: it reads the store, and fails with it.
    await expect(t.keys.resolve(signer.issuer)).rejects.toThrow(/timeout/)
    t.fail(false)
    expect((await t.keys.resolve(signer.issuer))?.signer.enabled).toBe(false)
    // The retry (a second later) succeeds: lookups answer from memory again.
    await vi.waitFor(() => expect(t.calls.byId).toBe(2), { timeout: 5000 })
    await vi.waitFor(async () => {
      const before = t.calls.byIssuer
      await t.keys.resolve(signer.issuer)
      expect(t.calls.byIssuer).toBe(before)
    })
    expect(t.keys.getById(signer.id)?.signer.enabled).toBe(false)
  })

  it('keeps the newer version when an earlier reread ends after a later one', async () => {
    const t = setup()
    const { v1 } = t
    t.hold(true)
    t.stored.set(v1.id, { ...v1, audience: 'second', updatedAt: '2026-11-22T08:00:01.000Z' })
    const earlier = t.keys.reload(v1.id)
    t.stored.set(v1.id, { ...v1, audience: 'third', updatedAt: '2026-11-22T08:00:02.000Z' })
    const later = t.keys.reload(v1.id)
    expect(t.held.length).toBe(2)
    t.held[1]?.release()
    await later
    expect(t.keys.getById(v1.id)?.signer.audience).toBe('third')
    t.held[0]?.release()
    await earlier
    expect(t.keys.getById(v1.id)?.signer.audience).toBe('third')
  })

  it('keeps a change made through this instance over a reread that began before it', async () => {
    const t = setup()
    const { v1 } = t
    t.hold(true)
    const reread = t.keys.reload(v1.id) // sees v1
    t.hold(false)
    const mine = { ...v1, enabled: false, updatedAt: '2026-11-22T08:00:03.000Z' }
    t.stored.set(v1.id, mine)
    t.keys.apply({ type: 'upsert', signer: mine })
    t.held[0]?.release()
    await reread
    await t.keys.resolve(v1.issuer) // waits for the reread the change started
    expect(t.keys.getById(v1.id)?.signer.enabled).toBe(false)
  })

  it("ends on the store's version when another instance's change is heard before this one's own", async () => {
    const t = setup()
    const { v1 } = t
    // This instance commits v2; another instance commits v3 right after, and its notification is
    // read before this instance applies its own commit: the reread sees v3.
    const v2 = { ...v1, audience: 'mine', updatedAt: '2026-11-22T08:00:01.000Z' }
    const v3 = { ...v1, enabled: false, updatedAt: '2026-11-22T08:00:02.000Z' }
    t.stored.set(v1.id, v3)
    t.hold(true)
    const reread = t.keys.reload(v1.id)
    t.hold(false)
    t.keys.apply({ type: 'upsert', signer: v2 })
    t.held[0]?.release()
    await reread
    await t.keys.resolve(v1.issuer)
    expect(t.keys.getById(v1.id)?.signer).toEqual(v3)
  })

  it("applies a reread that differs from what it holds under the same updatedAt (two instances' changes in one millisecond)", async () => {
    const t = setup()
    const v1: SignerRecord = { ...t.v1, jwksEndpoint: null, certPem: first.certPem, kid: 'k1' }
    t.keys.load([v1])
    const spki = (pem: string) =>
      new X509Certificate(pem).publicKey.export({ format: 'der', type: 'spki' }).toString('hex')
    const key = () =>
      t.keys.getById(v1.id)?.certKey?.export({ format: 'der', type: 'spki' }).toString('hex')
    // A reread of the very version held changes nothing.
    t.stored.set(v1.id, v1)
    await t.keys.reload(v1.id)
    expect(key()).toBe(spki(first.certPem))
    // The store's version has another certificate under the same updatedAt: it is applied.
    t.stored.set(v1.id, { ...v1, certPem: second.certPem, kid: 'k2' })
    await t.keys.reload(v1.id)
    expect(t.keys.getById(v1.id)?.signer.kid).toBe('k2')
    expect(key()).toBe(spki(second.certPem))
  })

  it('rereads at every lookup while a reread of every signer failed, until a retry succeeds', async () => {
    const t = setup()
    const { v1 } = t
    t.stored.delete(v1.id) // deleted elsewhere while this instance was not listening
    t.fail(true)
    await t.keys.reloadAll()
    t.fail(false)
    const before = t.calls.byIssuer
    expect(await t.keys.resolve(v1.issuer)).toBeUndefined()
    expect(t.calls.byIssuer).toBe(before + 1)
    await vi.waitFor(
      async () => {
        const now = t.calls.byIssuer
        await t.keys.resolve('https://unknown.example')
        expect(t.calls.byIssuer).toBe(now)
      },
      { timeout: 5000 },
    )
    expect(t.keys.getById(v1.id)).toBeUndefined()
  })

  it('does not look up an iss holding a NUL or a lone surrogate while lookups read the store: an unknown issuer', async () => {
    const t = setup()
    // Every lookup reads the store (a reread of every signer failed). PostgreSQL would answer
    // the lookup of an issuer holding a NUL with an error, not the token's refusal.
    t.fail(true)
    await t.keys.reloadAll()
    t.fail(false)
    const cert = await makeCert()
    const options = { clock: testClock(NOW), clockToleranceMs: 0 }
    for (const iss of ['https://idp\u0000.example', 'https://idp\uD800.example', 'a\nb']) {
      const token = await signJwt(
        cert.privateKey,
        { iss, aud: 'ziti', sub: 'x' },
        { kid: 'k1', now: new Date(NOW) },
      )
      const before = t.calls.byIssuer
      const refused = await verifyExternalJwt(token, t.keys, options).catch((err: unknown) => err)
      expect(refused).toBeInstanceOf(JwtRejected)
      expect((refused as JwtRejected).kind).toBe('unknown_issuer')
      expect(t.calls.byIssuer).toBe(before)
    }
    // A plain issuer is still read from the store meanwhile.
    const before = t.calls.byIssuer
    const token = await signJwt(
      cert.privateKey,
      { iss: 'https://other.example', aud: 'ziti' },
      { kid: 'k1', now: new Date(NOW) },
    )
    await expect(verifyExternalJwt(token, t.keys, options)).rejects.toMatchObject({
      kind: 'unknown_issuer',
    })
    expect(t.calls.byIssuer).toBe(before + 1)
  })

  it('stops retrying a failed reread once closed', async () => {
    const t = setup()
    const { v1 } = t
    t.fail(true)
    t.hold(true)
    const reread = t.keys.reload(v1.id)
    t.keys.close() // while the reread is under way: it fails after
    t.held[0]?.release()
    await reread
    expect(t.calls.byId).toBe(1)
    await new Promise((r) => setTimeout(r, 1500))
    expect(t.calls.byId).toBe(1)
    // Closed: neither retried nor logged.
    expect(t.warnings.filter((w) => w.startsWith('signer reread failed'))).toHaveLength(0)
  })
})
