import { afterEach, describe, expect, it, vi } from 'vitest'
import { AppError } from '../../src/errors.js'
import { newId } from '../../src/ids.js'
import { BatchWriter } from '../../src/store/batch-writer.js'
import type { LoginRecord, SessionRecord, Store } from '../../src/store/contract.js'
import { identityRecord, loginRecord, sessionRecord } from '../helpers/records.js'
import { openTestStore, STORES } from '../helpers/stores.js'

const session = (identityId: string, id = newId()) => sessionRecord(identityId, id)

describe.each(STORES)('BatchWriter on %s', (kind) => {
  let store: Store
  afterEach(async () => store?.close())

  async function setup() {
    store = await openTestStore(kind)
    await store.transaction((tx) => tx.identities.insert(identityRecord('alice')))
    const units = vi.spyOn(store, 'transaction')
    const writer = new BatchWriter<SessionRecord>((items) =>
      store.transaction((tx) => tx.sessions.insertMany(items)),
    )
    return { writer, units }
  }

  it('commits items added in the same turn together, and settles each only once stored', async () => {
    const { writer, units } = await setup()
    const pending = [1, 2, 3].map(() => writer.add(session('alice')))
    expect(await store.repos.sessions.count()).toBe(0)
    await Promise.all(pending)
    expect(await store.repos.sessions.count()).toBe(3)
    expect(units).toHaveBeenCalledTimes(1)
    await writer.add(session('alice'))
    expect(units).toHaveBeenCalledTimes(2)
  })

  it('starts the write at the end of the turn: an item of the next turn does not join it', async () => {
    await setup()
    const batches: string[][] = []
    const writer = new BatchWriter<SessionRecord>(async (items) => {
      batches.push(items.map((s) => s.id))
      await store.transaction((tx) => tx.sessions.insertMany(items))
    })
    const first = [writer.add(session('alice', 'a1')), writer.add(session('alice', 'a2'))]
    // The end of this turn (setImmediate callbacks run in the order they were queued).
    await new Promise((r) => setImmediate(r))
    expect(batches).toEqual([['a1', 'a2']])
    const later = writer.add(session('alice', 'b1'))
    await Promise.all([...first, later])
    expect(batches).toEqual([['a1', 'a2'], ['b1']])
    expect(await store.repos.sessions.count()).toBe(3)
  })

  it('runs one unit of work at a time: what arrives meanwhile waits and shares the next', async () => {
    await setup()
    let open!: () => void
    const gate = new Promise<void>((r) => {
      open = r
    })
    let opened = false
    const batches: number[] = []
    // Every unit of work waits for the gate, as slow commits would.
    const writer = new BatchWriter<SessionRecord>(async (items) => {
      batches.push(items.length)
      if (!opened) await gate
      await store.transaction((tx) => tx.sessions.insertMany(items))
    })
    const added: Promise<void>[] = []
    for (let i = 0; i < 6; i++) {
      added.push(writer.add(session('alice')))
      await new Promise((r) => setTimeout(r, 3)) // each past the batching window
    }
    // One begun; the other five wait for it to end.
    expect(batches).toEqual([1])
    opened = true
    open()
    await Promise.all(added)
    expect(batches).toEqual([1, 5])
    expect(await store.repos.sessions.count()).toBe(6)
    // Two units of work, six items, in flight at least as long as the first waited at the gate.
    expect(writer.stats).toMatchObject({ writes: 2, committed: 6 })
    expect(writer.stats.seconds).toBeGreaterThan(0.012)
  })

  it('runs as many units of work at once as its concurrency allows, the rest in the next', async () => {
    await setup()
    const gates: (() => void)[] = []
    const batches: number[] = []
    // Each unit of work waits for a gate of its own, as a batch waiting for its WAL's sync does.
    const writer = new BatchWriter<SessionRecord>(
      async (items) => {
        batches.push(items.length)
        await new Promise<void>((r) => gates.push(r))
        await store.transaction((tx) => tx.sessions.insertMany(items))
      },
      { concurrency: 2 },
    )
    const started = performance.now()
    const added: Promise<void>[] = []
    for (let i = 0; i < 6; i++) {
      added.push(writer.add(session('alice')))
      await new Promise((r) => setTimeout(r, 3)) // each past the batching window
    }
    // Two begun at once; the other four wait for one of them to end.
    expect(batches).toEqual([1, 1])
    gates[1]?.()
    await added[1]
    await new Promise((r) => setImmediate(r)) // its end starts the next
    expect(batches).toEqual([1, 1, 4])
    expect(await store.repos.sessions.count()).toBe(1)
    const drained = writer.drain()
    gates[0]?.()
    gates[2]?.()
    await drained
    await Promise.all(added)
    expect(await store.repos.sessions.count()).toBe(6)
    expect(writer.stats).toMatchObject({ writes: 3, committed: 6 })
    // The time at least one was in flight, not the sum of theirs: never more than the time taken.
    expect(writer.stats.seconds).toBeGreaterThan(0)
    expect(writer.stats.seconds).toBeLessThanOrEqual((performance.now() - started) / 1000)
  })

  it('drain commits everything queued, including what arrives while it waits', async () => {
    const { writer } = await setup()
    const items = Array.from({ length: 300 }, () => writer.add(session('alice')))
    await writer.drain()
    expect(await store.repos.sessions.count()).toBe(300)
    await Promise.all(items)
  })

  it('fails only the login whose write fails (the write the session service uses)', async () => {
    await setup()
    // As the session service: a login the store refused (its identity is gone) fails alone.
    const writer = new BatchWriter<LoginRecord>(async (items) => {
      const ended = await store.recordLogins(items, 100)
      const refused = new Map<LoginRecord, Error>()
      for (const { id } of ended.filter((e) => e.refused)) {
        const item = items.find((l) => l.session.id === id)
        if (item) refused.set(item, new Error(`refused ${id}`))
      }
      return refused
    })
    const login = (identityId: string, id = newId()) => loginRecord(session(identityId, id))
    await writer.add(login('alice', 'dup'))
    const results = await Promise.allSettled(
      [login('alice'), login('alice', 'dup'), login('nobody'), login('alice')].map((l) =>
        writer.add(l),
      ),
    )
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/^Error: refused /)
    expect(await store.repos.sessions.count()).toBe(3)
    // The first login's write, the failed group's, then one each: only stored logins count.
    expect(writer.stats).toMatchObject({ writes: 6, committed: 3 })
  })

  it('fails every item at once, without writing each alone, when the store does not answer', async () => {
    await setup()
    const down = new AppError('SERVICE_UNAVAILABLE')
    const write = vi.fn(async (_items: SessionRecord[]) => {
      throw down
    })
    const writer = new BatchWriter<SessionRecord>(write)
    const results = await Promise.allSettled([1, 2, 3].map(() => writer.add(session('alice'))))
    expect(results).toEqual([1, 2, 3].map(() => ({ status: 'rejected', reason: down })))
    expect(write).toHaveBeenCalledTimes(1)
    expect(writer.stats).toMatchObject({ writes: 1, committed: 0 })
  })
})
