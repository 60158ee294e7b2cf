import { afterEach, describe, expect, it } from 'vitest'
import type { SessionRecord, Store } from '../../src/store/contract.js'
import { identityRecord, sessionRecord } from '../helpers/records.js'
import { openTestStore, STORES } from '../helpers/stores.js'

/** The n-th session of an identity, created n seconds after a fixed start. */
function session(identityId: string, n: number): SessionRecord {
  const at = new Date(Date.UTC(2026, 10, 25, 8, 0, n)).toISOString()
  return sessionRecord(identityId, `${identityId}-${n}`, at, {
    expiresAt: '2099-01-01T00:00:00.000Z',
    hardExpiresAt: n % 2 ? at : null,
  })
}

describe.each(STORES)('the session cap on %s', (kind) => {
  let store: Store
  afterEach(async () => store?.close())

  it('ends the oldest sessions past the cap of every identity of a batch, and only those', async () => {
    store = await openTestStore(kind)
    const rows = [
      ...[1, 2, 3, 4, 5].map((n) => session('alice', n)),
      ...[1, 2, 3].map((n) => session('bob', n)),
      session('carol', 1),
    ]
    await store.transaction(async (tx) => {
      for (const id of ['alice', 'bob', 'carol']) await tx.identities.insert(identityRecord(id))
      await tx.sessions.insertMany(rows)
    })
    // Stored as given, arrays and nulls included.
    expect(await store.repos.sessions.get('alice-3')).toEqual(session('alice', 3))
    expect(await store.repos.sessions.get('bob-2')).toEqual(session('bob', 2))

    const ended = await store.transaction((tx) =>
      tx.sessions.trimForIdentities(['bob', 'alice', 'carol', 'alice'], 2),
    )
    expect(ended.sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      { id: 'alice-1', identityId: 'alice' },
      { id: 'alice-2', identityId: 'alice' },
      { id: 'alice-3', identityId: 'alice' },
      { id: 'bob-1', identityId: 'bob' },
    ])
    const left = (await store.repos.sessions.all()).map((s) => s.id).sort()
    expect(left).toEqual(['alice-4', 'alice-5', 'bob-2', 'bob-3', 'carol-1'])
    expect(await store.transaction((tx) => tx.sessions.trimForIdentities([], 2))).toEqual([])
  })

  it('issuedAtOnce: commits what the work issued at once, and rolls all of it back when one statement fails', async () => {
    store = await openTestStore(kind)
    await store.transaction(async (tx) => tx.identities.insert(identityRecord('alice')))
    const batch = (rows: SessionRecord[]) =>
      store.transaction(
        async (tx) => {
          const [, ended] = await Promise.all([
            tx.sessions.insertMany(rows),
            tx.sessions.trimForIdentities(['alice'], 2),
          ])
          return ended
        },
        { issuedAtOnce: true },
      )
    expect(await batch([1, 2, 3].map((n) => session('alice', n)))).toEqual([
      { id: 'alice-1', identityId: 'alice' },
    ])
    // The second row names no identity: the foreign key refuses it, and nothing of the batch stays.
    await expect(batch([session('alice', 4), session('nobody', 1)])).rejects.toThrow()
    expect((await store.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-2',
      'alice-3',
    ])
    // The store is usable afterwards (PostgreSQL: the connection went back to the pool clean).
    expect(await batch([session('alice', 5)])).toEqual([{ id: 'alice-2', identityId: 'alice' }])
  })

  it.runIf(kind === 'postgres')(
    'issuedAtOnce: a statement issued after an await is refused, not run outside the transaction',
    async () => {
      store = await openTestStore(kind)
      await store.transaction(async (tx) => tx.identities.insert(identityRecord('alice')))
      await expect(
        store.transaction(
          async (tx) => {
            await tx.sessions.insertMany([session('alice', 1)])
            await tx.sessions.insertMany([session('alice', 2)]) // too late: the COMMIT is written
          },
          { issuedAtOnce: true },
        ),
      ).rejects.toThrow('statement issued after the COMMIT of its unit of work')
      expect((await store.repos.sessions.all()).map((s) => s.id)).toEqual(['alice-1'])
    },
  )
})
