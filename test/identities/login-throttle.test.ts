import { afterEach, describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import { LoginThrottle, throttleKey } from '../../src/identities/login-throttle.js'
import type { Store } from '../../src/store/contract.js'
import { testClock } from '../helpers/app.js'
import { openTestStore, STORES } from '../helpers/stores.js'

let store: Store | undefined
afterEach(async () => {
  await store?.close()
  store = undefined
})

async function refusal(throttle: LoginThrottle, name: string): Promise<string | undefined> {
  try {
    await throttle.check(name)
    return undefined
  } catch (err) {
    return err instanceof AppError ? err.code : String(err)
  }
}

describe('login throttle on SQLite (counts kept in memory, bounded)', () => {
  it("a spray of made-up names never forgets an identity's count or backoff", async () => {
    store = await openTestStore('sqlite')
    const clock = testClock()
    const throttle = new LoginThrottle(store.repos.loginFailures, clock, {
      attempts: 3,
      firstMs: 60_000,
      maxMs: 60_000,
    })
    for (let i = 0; i < 3; i++) await throttle.failed('admin', undefined, true)
    expect(await refusal(throttle, 'admin')).toBe('RATE_LIMITED')
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
})
