import { randomBytes, scryptSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import {
  DEFAULT_SCRYPT_N,
  HashSlots,
  hashConcurrency,
  hashPassword,
  poolThreads,
  scryptCost,
  verifyPassword,
} from '../../src/identities/password.js'

/** A unit of work that ends when its `finish` is called. */
function gate() {
  let finish = () => {}
  const done = new Promise<void>((r) => {
    finish = r
  })
  return { finish, work: () => done }
}

describe('password hashing slots', () => {
  it('runs at most `concurrent` at once and refuses checks past the waiting bound with 429', async () => {
    const slots = new HashSlots(1, 2)
    const g = [gate(), gate(), gate()]
    let started = 0
    const runs = g.map((x) =>
      slots.run(() => {
        started++
        return x.work()
      }, true),
    )
    await Promise.resolve()
    expect(started).toBe(1) // one running, two waiting
    const refused = await slots.run(async () => 'never', true).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(AppError)
    expect((refused as AppError).code).toBe('RATE_LIMITED')
    expect((refused as AppError).statusCode).toBe(429)
    expect((refused as AppError).headers).toMatchObject({ 'retry-after': '1' })
    // Setting a password is never refused: it waits its turn behind the checks.
    let setDone = false
    const set = slots.run(async () => {
      setDone = true
    }, false)
    for (const x of g) x.finish()
    await Promise.all([...runs, set])
    expect(started).toBe(3)
    expect(setDone).toBe(true)
    // Once the queue drained, checks run again.
    await expect(slots.run(async () => 'ok', true)).resolves.toBe('ok')
  })

  it('a failing unit of work frees its slot for the next', async () => {
    const slots = new HashSlots(1, 1)
    const failing = slots.run(async () => {
      throw new Error('scrypt failed')
    }, true)
    const next = slots.run(async () => 'next', true)
    await expect(failing).rejects.toThrow('scrypt failed')
    await expect(next).resolves.toBe('next')
  })
})

describe('how many password hashes run at once', () => {
  it('is half the cores, leaving one thread of the pool free, and at least one', () => {
    expect(hashConcurrency(2, 4)).toBe(1)
    expect(hashConcurrency(4, 4)).toBe(2)
    expect(hashConcurrency(6, 4)).toBe(3)
    // Eight cores or more: half would take the whole default pool from the WAL sync and DNS.
    expect(hashConcurrency(8, 4)).toBe(3)
    expect(hashConcurrency(64, 4)).toBe(3)
    expect(hashConcurrency(64, 16)).toBe(15)
    expect(hashConcurrency(16, 64)).toBe(8)
    expect(hashConcurrency(1, 4)).toBe(1)
    expect(hashConcurrency(8, 1)).toBe(1) // a pool of one: hashes still run
  })

  it('reads the pool size as libuv does', () => {
    expect(poolThreads(undefined)).toBe(4)
    expect(poolThreads('8')).toBe(8)
    expect(poolThreads(' 12x')).toBe(12)
    expect(poolThreads('0')).toBe(1)
    expect(poolThreads('')).toBe(1)
    expect(poolThreads('many')).toBe(1)
    expect(poolThreads('5000')).toBe(1024)
    expect(poolThreads('-2')).toBe(1024)
  })
})

describe('scrypt cost (CTRL_PASSWORD_SCRYPT_N)', () => {
  it('is 16384 unset, takes powers of two from 1024 to 131072, refuses the rest', () => {
    expect(scryptCost(undefined)).toBe(DEFAULT_SCRYPT_N)
    expect(DEFAULT_SCRYPT_N).toBe(16384)
    expect(scryptCost(' ')).toBe(16384)
    for (const n of [1024, 2048, 16384, 131072]) expect(scryptCost(` ${n} `)).toBe(n)
    for (const bad of ['512', '1000', '262144', '0', '-1024', '1e4', '16384x', 'abc', '0x400']) {
      expect(() => scryptCost(bad), bad).toThrow(/^CTRL_PASSWORD_SCRYPT_N: must be a power of two/)
    }
  })

  it('hashes new passwords at the cost set for the process, and checks any stored cost', async () => {
    // vitest.config.ts sets 1024 for the tests; a hash keeps its own cost.
    const hash = await hashPassword('pw-1')
    expect(hash.startsWith('scrypt$1024$8$1$')).toBe(true)
    expect(await verifyPassword('pw-1', hash)).toBe(true)
    expect(await verifyPassword('pw-2', hash)).toBe(false)
    // A hash made at the default cost (and one at OWASP's 131072, 128 MiB) still verifies.
    const salt = randomBytes(16)
    for (const N of [16384, 131072]) {
      const key = scryptSync('pw-3', salt, 32, { N, r: 8, p: 1, maxmem: 256 * N * 8 })
      const stored = `scrypt$${N}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`
      expect(await verifyPassword('pw-3', stored), String(N)).toBe(true)
    }
  })
})
