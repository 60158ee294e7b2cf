import { constants, generateKeyPairSync, type KeyObject, sign } from 'node:crypto'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { type SignatureCheck, SignatureThreads } from '../../src/jwt/signature-threads.js'

const PKCS1 = constants.RSA_PKCS1_PADDING
const PSS = constants.RSA_PKCS1_PSS_PADDING

interface Family {
  name: string
  privateKey: KeyObject
  check: Omit<SignatureCheck, 'input' | 'signature'>
  sign: (input: string) => string
}

function family(
  name: string,
  privateKey: KeyObject,
  publicKey: KeyObject,
  check: Omit<SignatureCheck, 'input' | 'signature' | 'key'>,
): Family {
  const options = {
    key: privateKey,
    ...(check.padding === undefined ? {} : { padding: check.padding }),
    ...(check.saltLength === undefined ? {} : { saltLength: check.saltLength }),
    ...(check.signatureBytes === undefined ? {} : { dsaEncoding: 'ieee-p1363' as const }),
  }
  return {
    name,
    privateKey,
    check: { ...check, key: publicKey },
    sign: (input) => sign(check.hash, Buffer.from(input, 'latin1'), options).toString('base64url'),
  }
}

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ec256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
const ec521 = generateKeyPairSync('ec', { namedCurve: 'secp521r1' })
const ed = generateKeyPairSync('ed25519')
const FAMILIES = [
  family('RS256', rsa.privateKey, rsa.publicKey, { hash: 'sha256', padding: PKCS1 }),
  family('PS384', rsa.privateKey, rsa.publicKey, { hash: 'sha384', padding: PSS, saltLength: 48 }),
  family('ES256', ec256.privateKey, ec256.publicKey, { hash: 'sha256', signatureBytes: 64 }),
  family('ES512', ec521.privateKey, ec521.publicKey, { hash: 'sha512', signatureBytes: 132 }),
  family('EdDSA', ed.privateKey, ed.publicKey, { hash: null }),
]

/** A signing input of `n`, and the ways a check of it goes wrong. */
function cases(n: number): { check: SignatureCheck; valid: boolean; what: string }[] {
  const f = FAMILIES[n % FAMILIES.length] as Family
  const input = `eyJhbGciOiJ${n}.eyJzdWIiOiJ${'x'.repeat(n % 7)}`
  const signature = f.sign(input)
  const other = f.sign(`${input}x`)
  const base = { ...f.check, input }
  switch (n % 4) {
    case 0:
      return [{ check: { ...base, signature }, valid: true, what: `${f.name} valid` }]
    case 1:
      return [
        { check: { ...base, signature: other }, valid: false, what: `${f.name} other input's` },
        { check: { ...base, input: `${input}.`, signature }, valid: false, what: 'input changed' },
      ]
    case 2:
      return [
        { check: { ...base, signature: signature.slice(2) }, valid: false, what: 'cut short' },
        { check: { ...base, signature: '' }, valid: false, what: 'empty' },
      ]
    default:
      return [
        { check: { ...base, signature }, valid: true, what: `${f.name} valid` },
        // A check that cannot run (a key of another type) is a signature that does not verify.
        {
          check: {
            ...base,
            key: f.name === 'ES256' ? rsa.publicKey : ec256.publicKey,
            signature,
          },
          valid: false,
          what: 'key of another type',
        },
      ]
  }
}

const started: SignatureThreads[] = []
function threads(size: number, spawn?: () => Worker): SignatureThreads {
  const t = new SignatureThreads(size, spawn)
  started.push(t)
  return t
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.stop()))
})

/** Lets the queued checks go out as a batch (the hand-off runs after the poll phase). */
const handedOver = () => new Promise((r) => setImmediate(r))

describe('signature checks on threads of their own', () => {
  it('answers each check of a batch of every algorithm family, valid or not, as its own', async () => {
    const pool = threads(2)
    const all = Array.from({ length: 120 }, (_, n) => cases(n)).flat()
    const answers = await Promise.all(all.map((c) => pool.check(c.check)))
    expect(answers.map((valid, i) => `${all[i]?.what}: ${valid}`)).toEqual(
      all.map((c) => `${c.what}: ${c.valid}`),
    )
    expect(all.filter((c) => c.valid).length).toBeGreaterThan(30)
    expect(pool.running).toBeGreaterThanOrEqual(1)
    expect(pool.running).toBeLessThanOrEqual(2)
  })

  it('checks one signature at a time as well as in batches', async () => {
    const pool = threads(1)
    for (const n of [0, 1, 3, 4, 8]) {
      for (const c of cases(n)) expect(await pool.check(c.check), c.what).toBe(c.valid)
    }
    expect(pool.running).toBe(1)
  })

  it('keeps to one thread while it keeps up, and spreads batches once it is 16 checks behind', async () => {
    const pool = threads(2)
    const few = Array.from({ length: 10 }, (_, n) => cases(4 * n)).flat()
    expect(await Promise.all(few.map((c) => pool.check(c.check)))).toEqual(few.map(() => true))
    expect(pool.running).toBe(1)
    const slow = generateKeyPairSync('rsa', { modulusLength: 4096 })
    const f = family('RS512', slow.privateKey, slow.publicKey, { hash: 'sha512', padding: PKCS1 })
    const input = 'eyJhbGciOiJSUzUxMiJ9.eyJzdWIiOiJiZWhpbmQifQ'
    const good = { ...f.check, input, signature: f.sign(input) }
    const behind = Array.from({ length: 200 }, () => pool.check(good))
    await handedOver() // one batch of 200 to the first thread
    const next = Array.from({ length: 5 }, () => pool.check(good))
    await handedOver() // the first thread is 200 behind: a second one takes these
    expect(pool.running).toBe(2)
    expect(await Promise.all([...behind, ...next])).toEqual(Array(205).fill(true))
    expect(() => new SignatureThreads(0)).toThrow(RangeError)
  })

  it('answers the checks a failed thread held on the pool, and starts a new thread for the next', async () => {
    const pool = threads(1)
    const slow = generateKeyPairSync('rsa', { modulusLength: 4096 })
    const f = family('RS512', slow.privateKey, slow.publicKey, { hash: 'sha512', padding: PKCS1 })
    const input = 'eyJhbGciOiJSUzUxMiJ9.eyJzdWIiOiJzbG93In0'
    const good = { ...f.check, input, signature: f.sign(input) }
    const bad = { ...good, signature: f.sign(`${input}x`) }
    const held = Array.from({ length: 400 }, (_, i) => pool.check(i % 2 ? bad : good))
    await handedOver()
    expect(pool.running).toBe(1)
    await pool.stop() // the thread ends with the batch unanswered
    const answers = await Promise.all(held)
    expect(answers).toEqual(Array.from({ length: 400 }, (_, i) => i % 2 === 0))
    expect(await pool.check(good)).toBe(true)
    expect(pool.running).toBe(1)
  })

  it('keeps every check on the pool after three failures in a row, and answers them', async () => {
    const pool = threads(1)
    const [c] = cases(0)
    if (!c) throw new Error('no case')
    for (let i = 0; i < 3; i++) {
      const held = pool.check(c.check)
      await handedOver()
      await pool.stop()
      expect(await held).toBe(true)
    }
    expect(pool.running).toBe(0)
    expect(await pool.check(c.check)).toBe(true)
    expect(pool.running).toBe(0)
  })

  it('answers every check when threads fail as they start, or cannot start at all', async () => {
    let spawned = 0
    const dying = threads(1, () => {
      spawned++
      return new Worker('process.exit(3)', { eval: true })
    })
    const refused = threads(1, () => {
      spawned++
      throw new Error('no more threads')
    })
    for (const pool of [dying, refused]) {
      spawned = 0
      const all = Array.from({ length: 40 }, (_, n) => cases(n)).flat()
      // One batch per try: each fails, three in a row leave every check on the pool.
      for (let round = 0; round < 4; round++) {
        const answers = await Promise.all(all.map((c) => pool.check(c.check)))
        expect(answers).toEqual(all.map((c) => c.valid))
      }
      expect(spawned).toBe(3)
      expect(pool.running).toBe(0)
    }
  })
})
