import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { testServices } from '../helpers/services.js'
import { staleable } from '../helpers/staleable.js'
import { openTestStore } from '../helpers/stores.js'

// The secondary factor decided without waiting (ExternalJwtVerifier.secondaryKept): met only for
// a token verified before, for the very identity and required signer, both still enabled; in
// every other case it leaves the decision to the full check.

const NOW = new Date('2026-11-22T08:00:00.000Z')

let cert: TestCert
let other: TestCert
beforeAll(async () => {
  ;[cert, other] = await Promise.all([makeCert(), makeCert()])
})

describe('secondaryKept', () => {
  it('is met only by a token verified before for this identity and signer, both still enabled', async () => {
    const clock = testClock(NOW.toISOString())
    const real = await openTestStore('sqlite')
    onTestFinished(() => real.close())
    const { store, flags } = staleable(real)
    const services = await testServices(store, clock)
    const { signers, identities, verifier } = services
    const mfa = await signers.create({
      name: 'mfa',
      enabled: true,
      issuer: 'https://mfa.example',
      audience: 'ziti',
      certPem: cert.certPem,
      kid: 'k1',
    })
    const second = await signers.create({
      name: 'second',
      enabled: true,
      issuer: 'https://second.example',
      audience: 'ziti',
      certPem: other.certPem,
      kid: 'k2',
    })
    const alice = await identities.create({ name: 'alice' })
    const bob = await identities.create({ name: 'bob' })
    const token = (iss: string, sub: string, key: TestCert, kid: string) =>
      signJwt(key.privateKey, { iss, aud: 'ziti', sub }, { kid, now: NOW })
    const forAlice = await token('https://mfa.example', alice.id, cert, 'k1')
    const forBob = await token('https://mfa.example', bob.id, cert, 'k1')
    const fromSecond = await token('https://second.example', alice.id, other, 'k2')

    // Nothing verified yet: the full check decides, and then remembers.
    expect(verifier.secondaryKept([forAlice], alice, mfa.id)).toBeUndefined()
    expect(await verifier.secondary([forAlice], alice, mfa.id)).toEqual({ met: true })
    expect(verifier.secondaryKept([forAlice], alice, mfa.id)).toEqual({ met: true })
    expect(verifier.secondaryKept(['junk', forAlice], alice, mfa.id)).toEqual({ met: true })
    expect(verifier.secondaryKept([], alice, mfa.id)).toBeUndefined()

    // Another identity's token, or the right identity's from another signer: never met here.
    expect((await verifier.secondary([forBob], alice, mfa.id)).met).toBe(false)
    expect(await verifier.secondary([forBob], bob, mfa.id)).toEqual({ met: true })
    expect(verifier.secondaryKept([forBob], alice, mfa.id)).toBeUndefined()
    expect((await verifier.secondary([fromSecond], alice, mfa.id)).met).toBe(false)
    expect(await verifier.secondary([fromSecond], alice, second.id)).toEqual({ met: true })
    expect(verifier.secondaryKept([fromSecond], alice, mfa.id)).toBeUndefined()
    expect(verifier.secondaryKept([forAlice], alice, second.id)).toBeUndefined()

    // While changes may have been missed, the cache is not trusted: the full check decides.
    flags.stale = true
    expect(verifier.secondaryKept([forAlice], alice, mfa.id)).toBeUndefined()
    flags.stale = false
    expect(verifier.secondaryKept([forAlice], alice, mfa.id)).toEqual({ met: true })
    // An identity the caller holds as disabled, its token still remembered: not met here.
    expect(verifier.secondaryKept([forAlice], { ...alice, disabled: true }, mfa.id)).toBeUndefined()

    // The signer disabled, or the identity: not met here, and the full check refuses.
    await signers.patch(mfa.id, { enabled: false })
    expect(verifier.secondaryKept([forAlice], alice, mfa.id)).toBeUndefined()
    expect((await verifier.secondary([forAlice], alice, mfa.id)).met).toBe(false)
    await signers.patch(mfa.id, { enabled: true })
    expect(await verifier.secondary([forAlice], alice, mfa.id)).toEqual({ met: true })
    const disabled = await identities.patch(alice.id, { disabled: true })
    expect(verifier.secondaryKept([forAlice], disabled, mfa.id)).toBeUndefined()

    // Past the token's expiry (an hour): not met here either.
    clock.advance(2 * 60 * 60 * 1000)
    expect(verifier.secondaryKept([forBob], bob, mfa.id)).toBeUndefined()
    expect((await verifier.secondary([forBob], bob, mfa.id)).met).toBe(false)
  })
})
