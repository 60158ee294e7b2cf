import { constants, generateKeyPairSync, type KeyObject, sign } from 'node:crypto'
import { Writable } from 'node:stream'
import { Worker } from 'node:worker_threads'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type AlgorithmOptions,
  logThreadFailures,
  type SignatureCheck,
  SignatureThreads,
  type SignatureThreadsOptions,
  type ThreadFailure,
} from '../../src/jwt/signature-threads.js'

const PKCS1 = constants.RSA_PKCS1_PADDING
const PSS = constants.RSA_PKCS1_PSS_PADDING
const P1363 = 'ieee-p1363' as const

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
  hash: string | null,
  options: AlgorithmOptions,
  bytes = -1,
): Family {
  return {
    name,
    privateKey,
    check: { hash, options, bytes, key: publicKey },
    sign: (input) =>
      sign(hash, Buffer.from(input, 'latin1'), { ...options, key: privateKey }).toString(
        'base64url',
      ),
  }
}

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ec256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
const ec521 = generateKeyPairSync('ec', { namedCurve: 'secp521r1' })
const ed = generateKeyPairSync('ed25519')
const FAMILIES = [
  family('RS256', rsa.privateKey, rsa.publicKey, 'sha256', { padding: PKCS1 }),
  family('PS384', rsa.privateKey, rsa.publicKey, 'sha384', { padding: PSS, saltLength: 48 }),
  family('ES256', ec256.privateKey, ec256.publicKey, 'sha256', { dsaEncoding: P1363 }, 64),
  family('ES512', ec521.privateKey, ec521.publicKey, 'sha512', { dsaEncoding: P1363 }, 132),
  family('EdDSA', ed.privateKey, ed.publicKey, null, {}),
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
function threads(size: number, options?: SignatureThreadsOptions): SignatureThreads {
  const t = new SignatureThreads(size, options)
  started.push(t)
  return t
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.stop()))
})

/** Every failure `pool` tells its listeners of, as it happens. */
function failuresOf(pool: SignatureThreads): ThreadFailure[] {
  const told: ThreadFailure[] = []
  pool.onFailure((f) => told.push(f))
  return told
}

/** Lets the queued checks go out as a batch (the hand-off runs after the poll phase). */
const handedOver = () => new Promise((r) => setImmediate(r))

/** A thread that takes batches and never answers. */
const silent = () =>
  new Worker("require('node:worker_threads').parentPort.on('message', () => {})", { eval: true })

/** A thread that answers every batch with `answer` (source of a JS expression of `jobs`). */
const answering = (answer: string) => () =>
  new Worker(
    `const { parentPort } = require('node:worker_threads')
     parentPort.on('message', (jobs) => parentPort.postMessage(${answer}))`,
    { eval: true },
  )

/** Checks of every family, a third of them valid, and the answers they must get. */
function mixed(count: number) {
  const all = Array.from({ length: count }, (_, n) => cases(n)).flat()
  return { checks: all.map((c) => c.check), expected: all.map((c) => c.valid) }
}

/** A slow check (RSA 4096, SHA-512): valid, or with another input's signature. */
const slow = generateKeyPairSync('rsa', { modulusLength: 4096 })
const SLOW = family('RS512', slow.privateKey, slow.publicKey, 'sha512', { padding: PKCS1 })
const SLOW_INPUT = 'eyJhbGciOiJSUzUxMiJ9.eyJzdWIiOiJzbG93In0'
const slowGood: SignatureCheck = {
  ...SLOW.check,
  input: SLOW_INPUT,
  signature: SLOW.sign(SLOW_INPUT),
}
const slowBad: SignatureCheck = { ...slowGood, signature: SLOW.sign(`${SLOW_INPUT}x`) }

describe('signature checks on threads of their own', () => {
  it('answers each check of a batch of every algorithm family, valid or not, as its own', async () => {
    const pool = threads(2)
    const all = Array.from({ length: 120 }, (_, n) => cases(n)).flat()
    const answers = await Promise.all(all.map((c) => pool.check(c.check)))
    expect(answers.map((valid, i) => `${all[i]?.what}: ${valid}`)).toEqual(
      all.map((c) => `${c.what}: ${c.valid}`),
    )
    expect(all.filter((c) => c.valid).length).toBeGreaterThan(30)
    expect(pool.stats).toMatchObject({ thread: all.length, pool: 0 })
    expect(Object.values(pool.stats.failures)).toEqual([0, 0, 0, 0, 0, 0])
    expect(pool.running).toBeGreaterThanOrEqual(1)
    expect(pool.running).toBeLessThanOrEqual(2)
  })

  it('keeps each check of a batch apart whatever its strings hold (the framing characters too)', async () => {
    const pool = threads(1)
    const rs = FAMILIES[0] as Family
    const ec = FAMILIES[2] as Family
    const odd = ['0,0,5,9;', ';', ',,,', '1,0,3,4;abc', '\n\u00ff', '']
    const all = odd.flatMap((text, i) => {
      const input = `${text}.${i}${text}`
      const f = i % 2 ? rs : ec
      return [
        { check: { ...f.check, input, signature: f.sign(input) }, valid: true },
        { check: { ...f.check, input, signature: f.sign(`${input}${text}x`) }, valid: false },
        { check: { ...f.check, input: `${input};`, signature: f.sign(input) }, valid: false },
      ]
    })
    const answers = await Promise.all(all.map((c) => pool.check(c.check)))
    expect(answers).toEqual(all.map((c) => c.valid))
    expect(pool.stats).toMatchObject({ thread: all.length, pool: 0 })
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
    const few = mixed(6) // 10 checks, one batch
    expect(await Promise.all(few.checks.map((c) => pool.check(c)))).toEqual(few.expected)
    expect(pool.running).toBe(1)
    // One turn's 40 slow checks are split: 16 to the first thread, then a second one starts.
    const burst = Array.from({ length: 40 }, (_, i) => (i % 3 ? slowGood : slowBad))
    const answers = Promise.all(burst.map((c) => pool.check(c)))
    await handedOver()
    expect(pool.running).toBe(2)
    expect(await answers).toEqual(burst.map((c) => c === slowGood))
    expect(() => new SignatureThreads(0)).toThrow(RangeError)
  })

  it('answers the checks of a thread that stops before answering on the pool, and starts a new thread for the next', async () => {
    let spawned = 0
    const pool = threads(1, {
      spawn: () => (++spawned === 1 ? silent() : answering('new Uint8Array(jobs.count)')()),
    })
    const told = failuresOf(pool)
    const { checks, expected } = mixed(40)
    const held = Promise.all(checks.map((c) => pool.check(c)))
    await handedOver()
    expect(pool.running).toBe(1)
    await pool.stop() // the silent thread ends owing every answer
    expect(await held).toEqual(expected)
    expect(told).toEqual([{ reason: 'exit', code: expect.any(Number), owed: checks.length }])
    // Counted where they were answered: on the pool, not on the thread that never did.
    expect(pool.stats).toMatchObject({ thread: 0, pool: checks.length })
    expect(pool.stats.failures.exit).toBe(1)
    // The next thread answers "invalid" to everything: the answers come from it, in order.
    expect(await pool.check(slowGood)).toBe(false)
    expect(spawned).toBe(2)
    expect(pool.stats.thread).toBe(1)
  })

  it('gives up a thread that owes an answer past the deadline, and checks its batch on the pool', async () => {
    let spawned = 0
    const pool = threads(1, {
      deadlineMs: 100,
      spawn: () => {
        spawned++
        return silent()
      },
    })
    const told = failuresOf(pool)
    const { checks, expected } = mixed(20)
    expect(await Promise.all(checks.map((c) => pool.check(c)))).toEqual(expected)
    expect(pool.running).toBe(0)
    expect(spawned).toBe(1)
    expect(told).toEqual([{ reason: 'deadline', owed: checks.length }])
  })

  it('never takes an answer that is not one byte per check of the batch: forged checks still fail', async () => {
    // Answers "valid" to everything, with one byte too many, too few, or not as bytes.
    for (const answer of [
      'new Uint8Array(jobs.count + 1).fill(1)',
      'new Uint8Array(Math.max(0, jobs.count - 1)).fill(1)',
      'Array(jobs.count).fill(1)',
      "'1'.repeat(jobs.count)",
    ]) {
      const pool = threads(1, { spawn: answering(answer) })
      const told = failuresOf(pool)
      const { checks, expected } = mixed(20)
      expect(await Promise.all(checks.map((c) => pool.check(c))), answer).toEqual(expected)
      expect(pool.running, answer).toBe(0)
      expect(told, answer).toEqual([{ reason: 'wrong_answer', owed: checks.length }])
    }
  })

  it('keeps checks on the pool for a while after three failures in a row, then tries a thread again', async () => {
    let spawned = 0
    const pool = threads(1, {
      deadlineMs: 50,
      retryAfterMs: 2000,
      spawn: () => {
        spawned++
        return silent()
      },
    })
    const told = failuresOf(pool)
    for (let i = 0; i < 3; i++) expect(await pool.check(slowGood)).toBe(true)
    expect(spawned).toBe(3)
    // The third failure in a row says for how long checks stay on the pool.
    expect(told).toEqual([
      { reason: 'deadline', owed: 1 },
      { reason: 'deadline', owed: 1 },
      { reason: 'deadline', owed: 1, poolForMs: 2000 },
    ])
    // On the pool: answered at once, no thread started.
    const { checks, expected } = mixed(20)
    expect(await Promise.all(checks.map((c) => pool.check(c)))).toEqual(expected)
    expect(spawned).toBe(3)
    expect(pool.running).toBe(0)
    expect(pool.stats).toMatchObject({ thread: 0, pool: 3 + checks.length })
    await new Promise((r) => setTimeout(r, 2050))
    expect(await pool.check(slowBad)).toBe(false)
    expect(spawned).toBe(4)
  })

  it('answers every check when threads exit as they start, or cannot start at all', async () => {
    let spawned = 0
    const dying = threads(1, {
      spawn: () => {
        spawned++
        return new Worker('process.exit(3)', { eval: true })
      },
    })
    const refused = threads(1, {
      spawn: () => {
        spawned++
        throw new Error('no more threads')
      },
    })
    for (const [pool, reason] of [
      [dying, 'exit'],
      [refused, 'spawn'],
    ] as const) {
      spawned = 0
      const told = failuresOf(pool)
      const { checks, expected } = mixed(40)
      // One batch per try: each fails, three in a row leave every check on the pool.
      for (let round = 0; round < 4; round++) {
        const answers = await Promise.all(checks.map((c) => pool.check(c)))
        expect(answers).toEqual(expected)
      }
      expect(spawned).toBe(3)
      expect(pool.running).toBe(0)
      expect(told.map((f) => f.reason)).toEqual([reason, reason, reason])
      if (reason === 'exit') expect(told.map((f) => f.code)).toEqual([3, 3, 3])
      expect(told[2]?.poolForMs).toBe(60_000)
      expect(pool.stats.failures[reason]).toBe(3)
      expect(pool.stats.pool).toBe(4 * checks.length)
    }
  })

  it('logs threads given up at warn, with reason, checks owed and time on the pool, at most a line a while', async () => {
    const lines: Record<string, unknown>[] = []
    const log = pino(
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)))
          done()
        },
      }),
    )
    const refusing = (retryAfterMs: number) =>
      threads(1, {
        retryAfterMs,
        spawn: () => {
          throw new Error('no more threads')
        },
      })
    const msg = 'signature thread given up; its checks run on the libuv thread pool'
    const shown = () =>
      lines.splice(0).map(({ level, msg, reason, owed, poolForMs, alsoFailed }) => ({
        level,
        msg,
        reason,
        owed,
        poolForMs,
        alsoFailed,
      }))
    const line = { level: 40, msg, reason: 'spawn', owed: 1 }

    // Every failure, when lines may follow each other at once.
    const pool = refusing(100)
    const stopAll = logThreadFailures(pool, log, 0)
    for (let i = 0; i < 3; i++) expect(await pool.check(slowGood)).toBe(true)
    expect(shown()).toEqual([
      { ...line, poolForMs: undefined, alsoFailed: undefined },
      { ...line, poolForMs: undefined, alsoFailed: undefined },
      { ...line, poolForMs: 100, alsoFailed: undefined },
    ])
    // Once stopped, a thread that fails again (after the back-off) is counted, not logged.
    stopAll()
    await new Promise((r) => setTimeout(r, 150))
    expect(await pool.check(slowBad)).toBe(false)
    expect(pool.stats.failures.spawn).toBe(4)
    expect(shown()).toEqual([])

    // At most one line per 300 ms: the next says how many failed meanwhile.
    const flooded = refusing(10)
    const stop = logThreadFailures(flooded, log, 300)
    for (let i = 0; i < 3; i++) expect(await flooded.check(slowGood)).toBe(true)
    expect(shown()).toEqual([{ ...line, poolForMs: undefined, alsoFailed: undefined }])
    await new Promise((r) => setTimeout(r, 350))
    expect(await flooded.check(slowGood)).toBe(true)
    expect(shown()).toEqual([{ ...line, poolForMs: 10, alsoFailed: 2 }])
    stop()
  })
})
