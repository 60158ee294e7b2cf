import { afterEach, describe, expect, it } from 'vitest'
import type {
  AuditEventRecord,
  FeedEvent,
  LoginRecord,
  SessionRecord,
  Store,
} from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { parseListQuery } from '../../src/store/query/list-query.js'
import { AUDIT_LIST_SPEC } from '../../src/store/sqlite/audit-repository.js'
import { identityRecord, sessionRecord } from '../helpers/records.js'
import { freshPostgresUrl, openTestStore, STORES } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

/** The n-th session of an identity, created n seconds after a fixed start. */
function session(identityId: string, n: number): SessionRecord {
  const at = new Date(Date.UTC(2026, 10, 25, 8, 0, n)).toISOString()
  return sessionRecord(identityId, `${identityId}-${n}`, at, {
    expiresAt: '2099-01-01T00:00:00.000Z',
    hardExpiresAt: n % 2 ? at : null,
  })
}

function event(s: SessionRecord): AuditEventRecord {
  return {
    id: `event-${s.id}`,
    at: s.createdAt,
    actor: { id: s.identityId, name: `name of ${s.identityId}` },
    action: 'login',
    entityType: 'api-sessions',
    entityId: s.id,
    requestId: `req-${s.id}`,
    method: 'ext-jwt',
    changedFields: [],
  }
}

const logins = (identityId: string, ns: number[]): LoginRecord[] =>
  ns.map((n) => {
    const s = session(identityId, n)
    return { session: s, event: event(s) }
  })

const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)

describe.each(STORES)('a group commit of logins on %s', (kind) => {
  let store: Store
  const others: Store[] = []
  afterEach(async () => {
    await store?.close()
    for (const other of others.splice(0)) await other.close()
  })

  async function setup(...identities: string[]) {
    store = await openTestStore(kind)
    await store.transaction(async (tx) => {
      for (const id of identities) await tx.identities.insert(identityRecord(id))
    })
  }

  const stored = async () => (await store.repos.sessions.all()).map((s) => s.id).sort()

  it('stores each session as given, with its audit event', async () => {
    await setup('alice', 'bob')
    const batch = [...logins('alice', [1, 2]), ...logins('bob', [1])]
    expect(await store.recordLogins(batch)).toEqual([])
    expect(await store.repos.sessions.get('alice-1')).toEqual(session('alice', 1))
    expect(await store.repos.sessions.get('alice-2')).toEqual(session('alice', 2))
    expect(await store.repos.sessions.get('bob-1')).toEqual(session('bob', 1))
    const query = parseListQuery({ sort: 'at asc' }, AUDIT_LIST_SPEC)
    const events = (await store.repos.audit.list(query)).items
    expect(events).toEqual(batch.map((l) => l.event).sort((a, b) => a.at.localeCompare(b.at)))
  })

  it('ends the oldest sessions past the cap of every identity of the batch, and only those', async () => {
    await setup('alice', 'bob', 'carol')
    await store.recordLogins([...logins('alice', [1, 2, 3]), ...logins('bob', [1, 2])])
    const ended = await store.recordLogins(
      [...logins('bob', [3]), ...logins('alice', [4, 5]), ...logins('carol', [1])],
      2,
    )
    expect(ended.sort(byId)).toEqual([
      { id: 'alice-1', identityId: 'alice' },
      { id: 'alice-2', identityId: 'alice' },
      { id: 'alice-3', identityId: 'alice' },
      { id: 'bob-1', identityId: 'bob' },
    ])
    expect(await stored()).toEqual(['alice-4', 'alice-5', 'bob-2', 'bob-3', 'carol-1'])
    // The audit trail keeps every login, the ended sessions' included.
    const events = await store.repos.audit.list(parseListQuery({}, AUDIT_LIST_SPEC))
    expect(events.totalCount).toBe(9)
    expect(await store.recordLogins([], 2)).toEqual([])
  })

  it('stores nothing of a batch with a refused row, and the store works afterwards', async () => {
    await setup('alice')
    await store.recordLogins(logins('alice', [1, 2, 3]), 2)
    // The second login names no identity: the foreign key refuses it, and the whole batch goes.
    const refused = [...logins('alice', [4]), ...logins('nobody', [1])]
    await expect(store.recordLogins(refused, 2)).rejects.toThrow()
    expect(await stored()).toEqual(['alice-2', 'alice-3'])
    const events = await store.repos.audit.list(parseListQuery({}, AUDIT_LIST_SPEC))
    expect(events.items.map((e) => e.entityId).sort()).toEqual(['alice-1', 'alice-2', 'alice-3'])
    expect(await store.recordLogins(logins('alice', [5]), 2)).toEqual([
      { id: 'alice-2', identityId: 'alice' },
    ])
  })

  it('keeps the cap exact when batches of one identity commit at once', async () => {
    await setup('alice')
    // Ten batches of three logins each, all in flight together (PostgreSQL: on several connections).
    const batches = Array.from({ length: 10 }, (_, b) =>
      store.recordLogins(logins('alice', [3 * b + 1, 3 * b + 2, 3 * b + 3]), 4),
    )
    const ended = (await Promise.all(batches)).flat()
    expect(ended).toHaveLength(26)
    expect(new Set(ended.map((e) => e.id)).size).toBe(26)
    // Whatever the order they committed in, the survivors are the newest of the last to commit.
    const left = await store.repos.sessions.all()
    expect(left).toHaveLength(4)
    expect(left.every((s) => s.identityId === 'alice')).toBe(true)
  })

  it.runIf(kind === 'postgres')(
    'tells another instance that sessions were opened, and of each identity the cap ended sessions of',
    async () => {
      const url = await freshPostgresUrl()
      const quiet = { info: () => {}, warn: () => {} }
      const open = () =>
        openStore(
          { db: url, poolSize: 4, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
          quiet,
          async () => {},
        )
      store = await open()
      await store.transaction(async (tx) => {
        for (const id of ['alice', 'bob']) await tx.identities.insert(identityRecord(id))
      })
      const other = await open()
      others.push(other)
      const heard: FeedEvent[] = []
      const echoed: FeedEvent[] = []
      other.onFeed((e) => heard.push(e))
      store.onFeed((e) => echoed.push(e))
      await store.recordLogins([...logins('alice', [1, 2]), ...logins('bob', [1])], 1)
      await within(1000, async () =>
        expect(heard).toEqual([
          { type: 'change', change: { entity: 'session', op: 'upsert', id: '' } },
          { type: 'change', change: { entity: 'identity-sessions', op: 'delete', id: 'alice' } },
        ]),
      )
      expect(echoed).toEqual([]) // an instance's own changes are applied where it made them
    },
  )
})
