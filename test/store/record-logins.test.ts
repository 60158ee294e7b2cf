import { afterEach, describe, expect, it } from 'vitest'
import type { LoginRecord, Store } from '../../src/store/contract.js'
import { parseListQuery } from '../../src/store/query/list-query.js'
import { AUDIT_LIST_SPEC } from '../../src/store/sqlite/audit-repository.js'
import {
  identityRecord,
  insertIdentities,
  loginRecord,
  logins,
  nthSession,
} from '../helpers/records.js'
import { openTestStore, STORES } from '../helpers/stores.js'

const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)

describe.each(STORES)('a group commit of logins on %s', (kind) => {
  let store: Store
  afterEach(async () => store?.close())

  async function setup(...identities: string[]) {
    store = await openTestStore(kind)
    await insertIdentities(store, ...identities)
  }

  const stored = async () => (await store.repos.sessions.all()).map((s) => s.id).sort()
  const events = async (params = {}) =>
    (await store.repos.audit.list(parseListQuery(params, AUDIT_LIST_SPEC))).items

  it('stores each session as given, with its audit event', async () => {
    await setup('alice', 'bob')
    const batch = [...logins('alice', [1, 2]), ...logins('bob', [3])]
    expect(await store.recordLogins(batch)).toEqual([])
    for (const { session } of batch)
      expect(await store.repos.sessions.get(session.id)).toEqual(session)
    expect(await events({ sort: 'at asc' })).toEqual(batch.map((l) => l.event))
  })

  it('stores the audit events in the order given (the trail breaks ties of time by it)', async () => {
    await setup('alice', 'bob')
    const at = '2026-11-25T08:00:00.000Z'
    const batch = ['bob', 'alice', 'alice', 'bob', 'alice'].map((identity, n) =>
      loginRecord({ ...nthSession(identity, n), createdAt: at }),
    )
    await store.recordLogins(batch)
    expect((await events({ sort: 'at asc' })).map((e) => e.entityId)).toEqual(
      batch.map((l) => l.session.id),
    )
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
    expect(await events()).toHaveLength(9)
    expect(await store.recordLogins([], 2)).toEqual([])
  })

  it('refuses a login whose identity is gone, and stores the rest of its batch', async () => {
    await setup('alice')
    await store.recordLogins(logins('alice', [1, 2, 3]), 2)
    // The second login names no identity (deleted since its check): it alone is refused.
    const batch = [...logins('alice', [4]), ...logins('nobody', [1])]
    expect((await store.recordLogins(batch, 2)).sort(byId)).toEqual([
      { id: 'alice-2', identityId: 'alice' },
      { id: 'nobody-1', identityId: 'nobody', refused: true },
    ])
    expect(await stored()).toEqual(['alice-3', 'alice-4'])
    expect((await events()).map((e) => e.entityId).sort()).toEqual([
      'alice-1',
      'alice-2',
      'alice-3',
      'alice-4',
    ])
    expect(await store.recordLogins(logins('alice', [5]), 2)).toEqual([
      { id: 'alice-3', identityId: 'alice' },
    ])
  })

  it('refuses the logins whose identity was disabled, or whose password changed, since their check', async () => {
    await setup('alice', 'bob', 'carol')
    const setHash = (id: string, hash: string) =>
      store.transaction(async (tx) => {
        await tx.identities.setPasswordHash(id, hash, new Date().toISOString())
      })
    await setHash('alice', 'hash-1')
    await setHash('bob', 'hash-1')
    await store.transaction(async (tx) => {
      const carol = await tx.identities.get('carol')
      if (!carol) throw new Error('carol is stored')
      await tx.identities.update({ ...carol, disabled: true })
    })
    const [aliceOld, aliceNew] = logins('alice', [1, 2]) as [LoginRecord, LoginRecord]
    const [bobJwt] = logins('bob', [1]) as [LoginRecord]
    const [carolAny] = logins('carol', [1]) as [LoginRecord]
    await setHash('alice', 'hash-2') // changed after aliceOld's check, before aliceNew's
    const batch = [
      { ...aliceOld, passwordHash: 'hash-1' },
      { ...aliceNew, passwordHash: 'hash-2' },
      bobJwt, // a login without a password: bob's hash is not its business
      carolAny,
    ]
    expect((await store.recordLogins(batch)).sort(byId)).toEqual([
      { id: 'alice-1', identityId: 'alice', refused: true },
      { id: 'carol-1', identityId: 'carol', refused: true },
    ])
    expect(await stored()).toEqual(['alice-2', 'bob-1'])
    expect((await events()).map((e) => e.entityId).sort()).toEqual(['alice-2', 'bob-1'])
    // A password login of an identity without a password is refused too.
    await store.transaction(async (tx) => {
      await tx.identities.insert({ ...identityRecord('dave') })
    })
    const [dave] = logins('dave', [1]) as [LoginRecord]
    expect(await store.recordLogins([{ ...dave, passwordHash: 'hash-1' }])).toEqual([
      { id: 'dave-1', identityId: 'dave', refused: true },
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
    // Whichever order they committed in, the four newest are left.
    expect(await stored()).toEqual(['alice-27', 'alice-28', 'alice-29', 'alice-30'])
  })

  it('stores logins of any other shape exactly as given, beside those the session service makes', async () => {
    await setup('alice', 'bob')
    const [made, touched, legacy, edited] = [
      ...logins('alice', [1, 2]),
      ...logins('bob', [3, 4]),
    ] as [LoginRecord, LoginRecord, LoginRecord, LoginRecord]
    touched.session.lastActivityAt = '2026-11-25T09:00:00.000Z'
    touched.session.updatedAt = '2026-11-25T09:30:00.000Z'
    legacy.session.legacyToken = true
    edited.event = {
      ...edited.event,
      at: '2026-11-25T10:00:00.000Z',
      actor: { id: 'alice', name: 'name of alice' },
      action: 'logout',
      entityType: 'identities',
      entityId: 'bob',
      changedFields: ['name'],
    }
    // A batch of one shape, and one of every shape together.
    const batches = [[made], [touched, legacy, edited]]
    for (const batch of batches) expect(await store.recordLogins(batch)).toEqual([])
    for (const { session } of batches.flat())
      expect(await store.repos.sessions.get(session.id)).toEqual(session)
    expect((await events()).sort(byId)).toEqual(
      batches
        .flat()
        .map((l) => l.event)
        .sort(byId),
    )
  })

  it('stores a login whose free text holds a lone UTF-16 surrogate, as replacement characters', async () => {
    await setup('alice')
    const [login] = logins('alice', [1])
    if (!login) throw new Error('one login')
    login.event.actor = { id: 'alice', name: 'a\ud800b' }
    await store.recordLogins([login])
    // PostgreSQL's driver writes one U+FFFD, better-sqlite3 one per byte of the unpaired half.
    expect((await events())[0]?.actor?.name).toMatch(/^a\ufffd+b$/)
  })
})
