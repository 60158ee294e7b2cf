import { describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import { HashSlots } from '../../src/identities/password.js'

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
