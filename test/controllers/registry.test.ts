import { describe, expect, it, onTestFinished } from 'vitest'
import {
  ControllerRegistry,
  type ControllerSelf,
} from '../../src/controllers/controller-registry.js'
import type { Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { testClock } from '../helpers/app.js'
import { createTestDatabase, openTestStore, PG_URL } from '../helpers/stores.js'

const HEARTBEAT_MS = 5_000
const quiet = { info: () => {}, warn: () => {} }

function self(name: string): ControllerSelf {
  return { name, advertiseUrl: `http://${name}.test:1280`, certPem: '', fingerprint: '' }
}

/** A registry as one instance runs it: started, and stopped (if still running) when the test ends. */
async function instance(store: Store, clock: () => Date, name: string) {
  const registry = new ControllerRegistry({
    store,
    clock,
    self: self(name),
    heartbeatMs: HEARTBEAT_MS,
    log: quiet,
  })
  await registry.start()
  onTestFinished(() => registry.stop())
  return registry
}

async function online(registry: ControllerRegistry): Promise<Record<string, boolean>> {
  const page = await registry.list({ sort: 'name' })
  return Object.fromEntries(page.items.map((c) => [c.name, c.isOnline]))
}

describe('the controllers registry', () => {
  it('on SQLite holds the one instance, offline after three missed heartbeats, online again at the next', async () => {
    const store = await openTestStore('sqlite')
    onTestFinished(() => store.close())
    const clock = testClock()
    const registry = await instance(store, clock, 'solo')
    expect(await online(registry)).toEqual({ solo: true })

    clock.advance(3 * HEARTBEAT_MS)
    expect(await online(registry)).toEqual({ solo: true })
    clock.advance(1)
    expect(await online(registry)).toEqual({ solo: false })
    await registry.beat()
    expect(await online(registry)).toEqual({ solo: true })
  })

  it('gives enrollment the client view of every controller, online ones first', async () => {
    const store = await openTestStore('sqlite')
    onTestFinished(() => store.close())
    const clock = testClock()
    const a = await instance(store, clock, 'a')
    const b = await instance(store, clock, 'b')
    clock.advance(4 * HEARTBEAT_MS)
    await b.beat()
    const summaries = await a.summaries()
    expect(summaries.map((c) => [c.name, c.isOnline])).toEqual([
      ['b', true],
      ['a', false],
    ])
    expect(summaries[0]).toEqual({
      id: expect.any(String),
      name: 'b',
      apiAddresses: {
        'edge-client': [{ url: 'http://b.test:1280/edge/client/v1', version: 'v1' }],
        'edge-management': [{ url: 'http://b.test:1280/edge/management/v1', version: 'v1' }],
      },
      certPem: '',
      fingerprint: '',
      isOnline: true,
    })
  })

  it('leaves the list for good when it stops during a heartbeat, whichever reaches the store first', async () => {
    for (const stopFirst of [true, false]) {
      const store = await openTestStore('sqlite')
      onTestFinished(() => store.close())
      const clock = testClock()
      const registry = await instance(store, clock, 'leaving')
      // The heartbeat waits at the store until let through; the stop's removal may come first.
      const repo = store.repos.controllers
      const heartbeat = repo.heartbeat.bind(repo)
      let letThrough = () => {}
      const gate = new Promise<void>((resolve) => {
        letThrough = resolve
      })
      repo.heartbeat = async (id, at) => {
        await gate
        return heartbeat(id, at)
      }
      const beating = registry.beat()
      if (stopFirst) {
        // As before this was fixed: the row removed while the heartbeat is on its way.
        const row = (await registry.list({})).items[0] as { id: string }
        await repo.delete(row.id)
      }
      const stopping = registry.stop()
      letThrough()
      await Promise.all([beating, stopping])
      expect((await registry.list({})).items).toEqual([])
    }
  })

  describe.skipIf(!PG_URL)('on one PostgreSQL database', () => {
    /** Two stores on one database: two instances, each with its own pool. */
    async function twoStores(): Promise<[Store, Store]> {
      const url = await createTestDatabase()
      const open = () =>
        openStore(
          { db: url, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
          quiet,
          async () => {},
        )
      const first = await open()
      const second = await open()
      onTestFinished(async () => {
        await second.close()
        await first.close()
      })
      return [first, second]
    }

    it('two instances see each other; a stale one shows offline; a clean shutdown removes it; a restart replaces its row', async () => {
      const [storeA, storeB] = await twoStores()
      const clock = testClock()
      const a = await instance(storeA, clock, 'ctrl-a')
      const b = await instance(storeB, clock, 'ctrl-b')
      expect(await online(a)).toEqual({ 'ctrl-a': true, 'ctrl-b': true })
      expect(await online(b)).toEqual({ 'ctrl-a': true, 'ctrl-b': true })

      // ctrl-b stops beating (a crash): after three periods only ctrl-a, which beat, is online.
      clock.advance(3 * HEARTBEAT_MS + 1)
      await a.beat()
      expect(await online(a)).toEqual({ 'ctrl-a': true, 'ctrl-b': false })

      // ctrl-b restarts under its name: its row is replaced, not duplicated, and keeps its id.
      const before = (await a.list({})).items.find((c) => c.name === 'ctrl-b')
      const restarted = await instance(storeB, clock, 'ctrl-b')
      const after = (await a.list({})).items.filter((c) => c.name === 'ctrl-b')
      expect(after).toHaveLength(1)
      expect(after[0]?.id).toBe(before?.id)
      expect(after[0]?.lastJoinedAt).toBe(clock().toISOString())
      expect(await online(a)).toEqual({ 'ctrl-a': true, 'ctrl-b': true })

      // ctrl-a shuts down cleanly: ctrl-b no longer lists it.
      await a.stop()
      expect(await online(restarted)).toEqual({ 'ctrl-b': true })
    })

    it('an instance whose row was removed registers again at its next heartbeat', async () => {
      const [storeA, storeB] = await twoStores()
      const clock = testClock()
      const a = await instance(storeA, clock, 'ctrl-a')
      const b = await instance(storeB, clock, 'ctrl-b')
      const id = (await a.list({ filter: 'name = "ctrl-b"' })).items[0]?.id as string
      await storeA.repos.controllers.delete(id)
      expect(await online(a)).toEqual({ 'ctrl-a': true })
      await b.beat()
      expect(await online(a)).toEqual({ 'ctrl-a': true, 'ctrl-b': true })
    })
  })
})
