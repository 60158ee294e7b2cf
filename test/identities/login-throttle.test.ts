import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import {
  addressThrottleKey,
  familiarKey,
  LoginThrottle,
  nameWideKey,
  throttleKey,
} from '../../src/identities/login-throttle.js'
import type { Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { testClock } from '../helpers/app.js'
import { freshPostgresUrl, openTestStore, PG_URL, STORES } from '../helpers/stores.js'

let store: Store | undefined
afterEach(async () => {
  await store?.close()
  store = undefined
})

async function refusal(
  throttle: LoginThrottle,
  name: string,
  address?: string,
): Promise<string | undefined> {
  try {
    await throttle.check(name, address)
    return undefined
  } catch (err) {
    return err instanceof AppError ? err.code : String(err)
  }
}

/** A throttle of 3 attempts and a minute's lock over `store`, the identity name admin locked. */
async function adminLocked(on: Store) {
  const clock = testClock()
  const throttle = new LoginThrottle(on.repos.loginFailures, clock, {
    attempts: 3,
    firstMs: 60_000,
    maxMs: 60_000,
  })
  for (let i = 0; i < 3; i++) await throttle.failed('admin', undefined, true)
  expect(await refusal(throttle, 'admin')).toBe('RATE_LIMITED')
  return { clock, throttle }
}

describe('login throttle on SQLite (counts kept in memory, bounded)', () => {
  it("a spray of made-up names never forgets an identity's count or backoff", async () => {
    store = await openTestStore('sqlite')
    const { clock, throttle } = await adminLocked(store)
    // More made-up names than the store keeps (100,000), each failing once, after admin's lock.
    for (let i = 0; i < 100_500; i++) await throttle.failed(`made-up-${i}`)
    expect(await refusal(throttle, 'admin')).toBe('RATE_LIMITED')
    expect((await store.repos.loginFailures.get(throttleKey('admin')))?.failures).toBe(3)
    // The oldest made-up names made room for the newest.
    expect(await store.repos.loginFailures.get(throttleKey('made-up-0'))).toBeUndefined()
    expect((await store.repos.loginFailures.get(throttleKey('made-up-100499')))?.failures).toBe(1)
    // The backoff still ends, and a success still resets the count.
    clock.advance(60_000)
    expect(await refusal(throttle, 'admin')).toBeUndefined()
    await throttle.succeeded('admin')
    expect(await store.repos.loginFailures.get(throttleKey('admin'))).toBeUndefined()
  })
})

describe.each(STORES)('login throttle on %s: what is stored', (kind) => {
  it("keeps a name's count under a digest, never the name (it may be a mistyped password)", async () => {
    store = await openTestStore(kind)
    const clock = testClock()
    const throttle = new LoginThrottle(store.repos.loginFailures, clock, {
      attempts: 2,
      firstMs: 60_000,
      maxMs: 60_000,
    })
    const typed = 'correct horse battery staple'
    await throttle.failed(typed)
    await throttle.failed(typed)
    expect(await refusal(throttle, typed)).toBe('RATE_LIMITED')
    expect(await store.repos.loginFailures.get(typed)).toBeUndefined()
    const key = throttleKey(typed)
    expect(key).not.toContain('horse')
    expect((await store.repos.loginFailures.get(key))?.failures).toBe(2)
    expect(throttleKey(typed)).toBe(key) // the same on every instance, after every restart
    expect(throttleKey(`${typed}!`)).not.toBe(key)
  })

  it("keeps a name's count from one address under a digest of both, and locks that address only", async () => {
    store = await openTestStore(kind)
    const throttle = new LoginThrottle(store.repos.loginFailures, testClock(), {
      attempts: 2,
      firstMs: 60_000,
      maxMs: 60_000,
    })
    const typed = 'correct horse battery staple'
    await throttle.failed(typed, undefined, false, '192.0.2.1')
    await throttle.failed(typed, undefined, false, '192.0.2.1')
    expect(await refusal(throttle, typed, '192.0.2.1')).toBe('RATE_LIMITED')
    expect(await refusal(throttle, typed, '192.0.2.2')).toBeUndefined()
    const key = addressThrottleKey(typed, '192.0.2.1')
    expect(key).not.toContain('horse')
    expect(key).not.toContain('192.0.2')
    expect((await store.repos.loginFailures.get(key))?.failures).toBe(2)
    // From every address together: 2 of the 20 (ten times the attempts) that lock the name, kept
    // apart from a policy's count (under the name's own key).
    expect((await store.repos.loginFailures.get(nameWideKey(typed)))?.failures).toBe(2)
    expect(await store.repos.loginFailures.get(throttleKey(typed))).toBeUndefined()
    // A third failure from that address, in its backoff, adds nothing to the name's.
    await throttle.failed(typed, undefined, false, '192.0.2.1')
    expect((await store.repos.loginFailures.get(key))?.failures).toBe(3)
    expect((await store.repos.loginFailures.get(nameWideKey(typed)))?.failures).toBe(2)
    await throttle.succeeded(typed, '192.0.2.2')
    expect(await store.repos.loginFailures.get(nameWideKey(typed))).toBeUndefined()
    expect((await store.repos.loginFailures.get(key))?.failures).toBe(3) // another address's
    const familiar = await store.repos.loginFailures.get(familiarKey(typed, '192.0.2.2'))
    expect(familiar?.lockedUntil).toBeDefined()
    expect(familiarKey(typed, '192.0.2.2')).not.toBe(addressThrottleKey(typed, '192.0.2.2'))
  })

  it('never shortens a lock: two failures counted at once, the longer lock set first, keep the longer', async () => {
    store = await openTestStore(kind)
    const clock = testClock()
    const throttle = new LoginThrottle(store.repos.loginFailures, clock, {
      attempts: 1,
      firstMs: 60_000,
      maxMs: 600_000,
    })
    const repo = store.repos.loginFailures
    // Two instances (or two requests) count failures 1 and 2 of one name at the same moment; the
    // second's lock (2 minutes) is written before the first's (1 minute).
    const failures = [
      await repo.addFailure(throttleKey('admin'), clock().toISOString(), true),
      await repo.addFailure(throttleKey('admin'), clock().toISOString(), true),
    ]
    expect(failures).toEqual([1, 2])
    const at = (ms: number) => new Date(clock().getTime() + ms).toISOString()
    await repo.lockUntil(throttleKey('admin'), at(120_000))
    await repo.lockUntil(throttleKey('admin'), at(60_000))
    clock.advance(90_000)
    expect(await refusal(throttle, 'admin')).toBe('RATE_LIMITED')
    clock.advance(30_000)
    expect(await refusal(throttle, 'admin')).toBeUndefined()
  })
})

describe.skipIf(!PG_URL)(
  'login throttle on PostgreSQL (counts shared, made-up names bounded)',
  () => {
    it("keeps only the newest 100,000 made-up names at each purge, and every identity's count and lock", async () => {
      const url = await freshPostgresUrl()
      store = await openStore(
        { db: url, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
        { info: () => {}, warn: () => {} },
        async () => {},
      )
      const { clock, throttle } = await adminLocked(store)
      // A made-up name that once failed, later failing as an identity's name, stays known.
      await throttle.failed('later-created')
      clock.advance(1)
      // More made-up names than are kept, failed after admin (as one statement: 100,500 logins
      // would take minutes), then one more through the throttle, the newest.
      const db = new pg.Client({ connectionString: url })
      await db.connect()
      try {
        await db.query(
          `INSERT INTO login_failures (name, failures, locked_until, updated_at, known)
         SELECT 'made-up-' || n, 3, $1::timestamptz + interval '1 hour', $1::timestamptz + n * interval '1 ms', false
           FROM generate_series(0, 100499) AS n`,
          [clock().toISOString()],
        )
        clock.advance(200_000)
        await throttle.failed('later-created', undefined, true)
        await throttle.failed('newest-made-up')
        // Nothing is a day old: only the bound deletes, and only made-up names, locked or not.
        expect(await throttle.purge()).toBe(501)
        const kept = await db.query(
          'SELECT known, count(*)::int AS n FROM login_failures GROUP BY known ORDER BY known',
        )
        expect(kept.rows).toEqual([
          { known: false, n: 100_000 },
          { known: true, n: 2 },
        ])
      } finally {
        await db.end()
      }
      // The oldest made-up names made room; the newest, admin's lock and the name now known stay.
      // (The rows inserted above are named as stored, not through throttleKey.)
      expect(await store.repos.loginFailures.get('made-up-0')).toBeUndefined()
      expect(await store.repos.loginFailures.get('made-up-500')).toBeUndefined()
      expect(await store.repos.loginFailures.get('made-up-501')).toMatchObject({ failures: 3 })
      expect((await store.repos.loginFailures.get(throttleKey('newest-made-up')))?.failures).toBe(1)
      expect((await store.repos.loginFailures.get(throttleKey('later-created')))?.failures).toBe(2)
      expect(await refusal(throttle, 'admin')).toBeUndefined() // its minute of backoff is over
      expect((await store.repos.loginFailures.get(throttleKey('admin')))?.failures).toBe(3)
    })
  },
)
