import type pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import type { FeedEvent, LoginRecord, Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { NOTICE_ID, recordLogins } from '../../src/store/postgres/login-batch.js'
import { insertIdentities, logins, nthSession } from '../helpers/records.js'
import { connectedClient, createTestDatabase, freshPostgresUrl, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

const quiet = { info: () => {}, warn: () => {} }
const open = (url: string) =>
  openStore(
    { db: url, poolSize: 4, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
    quiet,
    async () => {},
  )

/** Notification payloads for group commits made outside a store (LoginNotices). */
const NOTICES = { channel: 'test_logins', opened: '{}', ended: `{"id":${NOTICE_ID}}` }

/** The session cap's lock of an identity: the key every release takes it with (rolling upgrades). */
const CAP_LOCK = 'pg_advisory_xact_lock(1936028531, hashtext($1))'

describe.runIf(PG_URL)('a group commit of logins on PostgreSQL, between instances', () => {
  const stores: Store[] = []
  const clients: pg.Client[] = []
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close()
    for (const client of clients.splice(0)) await client.end()
  })

  async function setup(url: string, ...identities: string[]): Promise<Store> {
    const store = await open(url)
    stores.push(store)
    await insertIdentities(store, ...identities)
    return store
  }

  const client = (url: string) => connectedClient(url, clients)

  it('waits for the lock an instance of any release holds on the identity before trimming', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice')
    const other = await client(url)
    await other.query(`BEGIN; SELECT ${CAP_LOCK.replace('$1', "'alice'")}`)
    let settled = false
    // A refusal is held, not left unhandled, while the test awaits the lock.
    const batch = store.recordLogins(logins('alice', [1]), 2).then(
      (ended) => ended,
      (err: unknown) => err,
    )
    void batch.then(() => {
      settled = true
    })
    // The call waits on exactly that lock (the same two keys), not on anything else.
    const watcher = await client(url)
    await within(2000, async () => {
      const { rows } = await watcher.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
           AND classid = 1936028531 AND objid = (hashtext('alice')::bigint & 4294967295)::oid`,
      )
      expect(rows[0]).toEqual({ n: 1 })
    })
    expect(settled).toBe(false)
    await other.query('COMMIT')
    expect(await batch).toEqual([])
  })

  it('never deadlocks batches naming the same identities in different orders', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob', 'carol')
    let n = 0
    const batch = (order: string[]) =>
      store.recordLogins(
        order.flatMap((id) => logins(id, [++n])),
        3,
      )
    const rounds = Array.from({ length: 15 }, () =>
      Promise.all([batch(['carol', 'bob', 'alice']), batch(['alice', 'bob', 'carol'])]),
    )
    await Promise.all(rounds) // a deadlock would reject one of them (40P01)
    const left = await store.repos.sessions.all()
    for (const id of ['alice', 'bob', 'carol']) {
      expect(left.filter((s) => s.identityId === id)).toHaveLength(3)
    }
  })

  it('keeps the cap exact on a database whose default isolation is REPEATABLE READ', async () => {
    const url = await createTestDatabase()
    const name = new URL(url).pathname.slice(1)
    const admin = await client(PG_URL as string) // runIf: set
    await admin.query(
      `ALTER DATABASE ${name} SET default_transaction_isolation = 'repeatable read'`,
    )
    const store = await setup(url, 'alice')
    const batches = Array.from({ length: 10 }, (_, b) =>
      store.recordLogins(logins('alice', [3 * b + 1, 3 * b + 2, 3 * b + 3]), 4),
    )
    expect((await Promise.all(batches)).flat()).toHaveLength(26)
    expect((await store.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-27',
      'alice-28',
      'alice-29',
      'alice-30',
    ])
  })

  it('tells another instance that sessions were opened for an identity that had none, and of each identity the cap ended sessions of', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob', 'carol')
    const other = await open(url)
    stores.push(other)
    const heard: FeedEvent[] = []
    const echoed: FeedEvent[] = []
    other.onFeed((e) => heard.push(e))
    store.onFeed((e) => echoed.push(e))
    const opened = {
      type: 'change',
      change: { entity: 'session', op: 'upsert', id: '' },
      own: false,
    }
    // Without a cap nothing ends; with a cap of 1, two of alice's sessions end and none of bob's.
    await store.recordLogins([...logins('alice', [1, 2]), ...logins('bob', [1])])
    // Alice had sessions: nothing another instance shows changes but what the cap ended.
    await store.recordLogins(logins('alice', [3]), 1)
    // Carol had none: one identity of a batch is enough.
    await store.recordLogins([...logins('bob', [2]), ...logins('carol', [1])])
    await within(1000, async () =>
      expect(heard).toEqual([
        opened,
        {
          type: 'change',
          change: { entity: 'identity-sessions', op: 'delete', id: 'alice' },
          own: false,
        },
        opened,
      ]),
    )
    // Each identity's sessions all ended: its next login is news again.
    await store.repos.sessions.deleteExpired('2100-01-01T00:00:00.000Z')
    await store.recordLogins(logins('bob', [3]))
    await within(1000, async () => expect(heard.slice(3)).toEqual([opened]))
    // The instance that stored them hears the same, marked as its own (applied there already, and
    // followed again in case a commit's answer was lost).
    await within(1000, async () => expect(echoed).toEqual(heard.map((e) => ({ ...e, own: true }))))
  })

  it('holds the session that spares a login its notice until the login commits, and never waits for one being ended', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob')
    await store.recordLogins([...logins('alice', [1]), ...logins('bob', [1, 2])])
    const listener = await client(url)
    const notices: string[] = []
    listener.on('notification', (n) => notices.push(n.payload ?? ''))
    await listener.query(`LISTEN ${NOTICES.channel}`)
    // A batch of alice, written and not committed: her only earlier session cannot end meanwhile.
    const batch = await client(url)
    await batch.query('BEGIN')
    await recordLogins(batch, logins('alice', [2]), 5, NOTICES)
    const admin = await client(url)
    let deleted = false
    const deletion = admin.query("DELETE FROM api_sessions WHERE id = 'alice-1'").then(
      () => {
        deleted = true
      },
      (err: unknown) => err,
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(deleted).toBe(false)
    await batch.query('COMMIT')
    expect(await deletion).toBeUndefined()
    // Whoever hears of alice-1's end reads alice-2 too; no notice was needed for it.
    expect(await store.repos.sessions.identitiesWithSessions(['alice'])).toEqual(['alice'])
    // Bob's oldest session is being ended: his login neither waits for that nor locks another in
    // its place (a deletion of all his sessions may hold it), so it tells other instances.
    await admin.query("BEGIN; DELETE FROM api_sessions WHERE id = 'bob-1'")
    await batch.query('BEGIN')
    await recordLogins(batch, logins('bob', [3]), 5, NOTICES)
    await batch.query('COMMIT')
    await admin.query('COMMIT')
    await within(1000, async () => expect(notices).toEqual([NOTICES.opened]))
    expect(await store.repos.sessions.identitiesWithSessions(['bob'])).toEqual(['bob'])
    // The expiry sweep leaves a session a batch holds for the next sweep, without waiting.
    await batch.query('BEGIN')
    await recordLogins(batch, logins('alice', [3]), 5, NOTICES)
    expect(await store.repos.sessions.deleteExpired('2100-01-01T00:00:00.000Z')).toBe(2) // bob's
    await batch.query('COMMIT')
    const ids = async () => (await store.repos.sessions.all()).map((s) => s.id).sort()
    expect(await ids()).toEqual(['alice-2', 'alice-3'])
    expect(await store.repos.sessions.deleteExpired('2100-01-01T00:00:00.000Z')).toBe(2)
    expect(await ids()).toEqual([])
  })

  it('reads sessions by index once the table outgrew the plans a connection made on a new database', async () => {
    const url = await freshPostgresUrl()
    await setup(url, 'alice', 'bob')
    // As autovacuum does soon after the first rows: statistics of a nearly empty table. A pooled
    // connection's first calls then make their plans, and the connection keeps them.
    const first = await client(url)
    await recordLogins(first, logins('alice', [1]), 100, NOTICES)
    await first.query('ANALYZE api_sessions')
    for (let n = 2; n <= 8; n++) await recordLogins(first, logins('alice', [n]), 100, NOTICES)
    // The table grows, with no ANALYZE in between.
    const other = await client(url)
    await other.query(
      `INSERT INTO api_sessions (id, token_hash, identity_id, authenticator_id, ip_address,
         created_at, updated_at, last_activity_at, expires_at)
       SELECT 'bob-' || g, sha256(g::text::bytea), 'bob', 'updb', '127.0.0.1', now(), now(), now(),
         now() + interval '1 hour'
       FROM generate_series(101, 20000) AS g`,
    )
    // A login of alice, at and then past the cap, scans none of it: the counts of this transaction.
    await first.query('BEGIN')
    const ended = await recordLogins(first, logins('alice', [9]), 8, NOTICES)
    const { rows } = await first.query(
      `SELECT seq_scan::int AS seq, idx_scan::int AS idx
         FROM pg_stat_xact_user_tables WHERE relname = 'api_sessions'`,
    )
    await first.query('COMMIT')
    expect(ended).toEqual([{ id: 'alice-1', identityId: 'alice' }])
    expect(rows[0].seq).toBe(0)
    expect(rows[0].idx).toBeGreaterThan(0)
  })

  /** The sessions of `identityId` left, by number, oldest first. */
  async function left(store: Store, identityId: string): Promise<string[]> {
    return (await store.repos.sessions.all())
      .filter((s) => s.identityId === identityId)
      .map((s) => s.id)
      .sort((a, b) => Number(a.split('-')[1]) - Number(b.split('-')[1]))
  }

  /**
   * How many times `login` read api_sessions (index or sequential scans), in a transaction of its
   * own (the counts of the transaction so far, before and after: the view may hold earlier ones
   * still unflushed), and what it ended.
   */
  async function readsOf(c: pg.Client, login: () => Promise<unknown>) {
    const reads = async () =>
      (
        await c.query(
          `SELECT (coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0))::int AS n
             FROM pg_stat_xact_user_tables WHERE relname = 'api_sessions'`,
        )
      ).rows[0].n as number
    await c.query('BEGIN')
    const before = await reads()
    const ended = await login()
    const after = await reads()
    await c.query('COMMIT')
    return { reads: after - before, ended }
  }

  it('reads one of the sessions of an identity surely under its cap at a login, not all', async () => {
    const url = await freshPostgresUrl()
    await setup(url, 'alice')
    const c = await client(url)
    const login = (ns: number[]) =>
      readsOf(c, () => recordLogins(c, logins('alice', ns), 5, NOTICES))
    // The first login counts them (nothing is known yet); the next ones add to that count, and
    // read only the oldest, found then locked (it spares other instances a notice: see above).
    expect((await login([1, 2, 3])).reads).toBeGreaterThan(0)
    for (const n of [4, 5]) expect(await login([n])).toEqual({ reads: 2, ended: [] })
    // At the cap, each login reads them again and ends the oldest.
    const past = await login([6])
    expect(past.ended).toEqual([{ id: 'alice-1', identityId: 'alice' }])
    expect(past.reads).toBeGreaterThan(0)
  })

  it('stores the logins the session service makes through the arrays of record_logins_v4, any other through record_logins_v2', async () => {
    const url = await freshPostgresUrl()
    await setup(url, 'alice')
    const c = await client(url)
    const [made, other] = logins('alice', [1, 2]) as [LoginRecord, LoginRecord]
    other.session.lastActivityAt = '2026-11-25T09:00:00.000Z'
    // Each function out of reach in turn: a batch needs only its own.
    await c.query('ALTER FUNCTION record_logins_v2 RENAME TO record_logins_v2_away')
    try {
      expect(await recordLogins(c, [made], 3, NOTICES)).toEqual([])
      await expect(recordLogins(c, [other], 3, NOTICES)).rejects.toThrow()
    } finally {
      await c.query('ALTER FUNCTION record_logins_v2_away RENAME TO record_logins_v2')
    }
    await c.query('ALTER FUNCTION record_logins_v4 RENAME TO record_logins_v4_away')
    try {
      expect(await recordLogins(c, [other], 3, NOTICES)).toEqual([])
    } finally {
      await c.query('ALTER FUNCTION record_logins_v4_away RENAME TO record_logins_v4')
    }
    const { rows } = await c.query('SELECT id FROM api_sessions ORDER BY id')
    expect(rows).toEqual([{ id: 'alice-1' }, { id: 'alice-2' }])
  })

  /** Resolves once some statement of this test's database waits for a lock. */
  async function someoneWaits(url: string): Promise<void> {
    const watcher = await client(url)
    await within(2000, async () => {
      const { rows } = await watcher.query(
        `SELECT count(*)::int AS n FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
          WHERE NOT l.granted AND a.datname = current_database()`,
      )
      expect(rows[0].n).toBeGreaterThan(0)
    })
  }

  it("waits for a change that ends an identity's sessions, then refuses its logins", async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice')
    const change = await client(url)
    // Another instance disables alice: the identity updated, its sessions not yet ended (a batch
    // reading it FOR KEY SHARE would not wait for that update, and would read her enabled).
    await change.query(`BEGIN; UPDATE identities SET disabled = true WHERE id = 'alice'`)
    let settled = false
    const batch = store.recordLogins(logins('alice', [1]), 2).finally(() => {
      settled = true
    })
    await someoneWaits(url)
    expect(settled).toBe(false)
    await change.query(`DELETE FROM api_sessions WHERE identity_id = 'alice'; COMMIT`)
    expect(await batch).toEqual([{ id: 'alice-1', identityId: 'alice', refused: true }])
    expect(await store.repos.sessions.all()).toEqual([])
  })

  it('ends the sessions of a batch that read the identity first, once it commits (disable, password change)', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob')
    const end = {
      disable: (tx: Parameters<Parameters<Store['transaction']>[0]>[0]) =>
        tx.sessions.deleteForIdentity('alice'),
      password: (tx: Parameters<Parameters<Store['transaction']>[0]>[0]) =>
        tx.sessions.deleteForIdentityExcept('alice', 'none').then((ids) => ids.length),
    }
    let n = 0
    for (const [kind, ends] of Object.entries(end)) {
      // A login batch of another instance, its statement run and its transaction still open.
      const batch = await client(url)
      await batch.query('BEGIN')
      n += 1
      expect(await recordLogins(batch, logins('alice', [n]), 3, NOTICES)).toEqual([])
      let settled = false
      const change = store
        .transaction(async (tx) => {
          const alice = await tx.identities.get('alice')
          if (!alice) throw new Error('alice is stored')
          await tx.identities.update({ ...alice, updatedAt: new Date().toISOString() })
          return ends(tx)
        })
        .finally(() => {
          settled = true
        })
      await someoneWaits(url)
      expect(settled, kind).toBe(false)
      await batch.query('COMMIT')
      expect(await change, kind).toBe(1) // the batch's session, committed while the change waited
      expect(await store.repos.sessions.all(), kind).toEqual([])
    }
    // Nothing of bob's waits on alice's change, or is ended by it.
    expect(await store.recordLogins(logins('bob', [1]), 3)).toEqual([])
  })

  it('counts toward the cap the sessions that any writer inserted, and not those since ended', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob')
    await store.recordLogins(logins('alice', [1]), 4)
    // Sessions inserted otherwise (copy-to-postgres, an instance of the release before, by hand).
    await store.repos.sessions.insertMany([2, 3, 4].map((n) => nthSession('alice', n)))
    const other = await client(url)
    await other.query(
      `INSERT INTO api_sessions (id, token_hash, identity_id, authenticator_id, ip_address,
         created_at, updated_at, last_activity_at, expires_at)
       VALUES ('alice-5', sha256('5'::bytea), 'alice', 'updb', '127.0.0.1',
         '2026-11-25T08:00:05Z', now(), now(), now() + interval '1 hour')`,
    )
    expect(await store.recordLogins(logins('alice', [6]), 4)).toEqual(
      expect.arrayContaining([
        { id: 'alice-1', identityId: 'alice' },
        { id: 'alice-2', identityId: 'alice' },
      ]),
    )
    expect(await left(store, 'alice')).toEqual(['alice-3', 'alice-4', 'alice-5', 'alice-6'])
    // Two end (a logout, say): the next two logins fit, the one after ends the oldest.
    await store.repos.sessions.delete('alice-3')
    await store.repos.sessions.delete('alice-4')
    expect(await store.recordLogins(logins('alice', [7, 8]), 4)).toEqual([])
    expect(await store.recordLogins(logins('alice', [9]), 4)).toEqual([
      { id: 'alice-5', identityId: 'alice' },
    ])
    expect(await left(store, 'alice')).toEqual(['alice-6', 'alice-7', 'alice-8', 'alice-9'])
    expect(await left(store, 'bob')).toEqual([])
  })

  it('keeps the cap exact beside instances of the release before, and never deadlocks with them', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob', 'carol')
    // An instance of the release before calls record_logins (012) with the same arguments.
    const previous = await client(url)
    const before: Pick<pg.Client, 'query'> = {
      query: ((config: pg.QueryConfig) =>
        previous.query({
          text: config.text.replace('record_logins_v2(', 'record_logins('),
          values: config.values ?? [],
        })) as pg.Client['query'],
    }
    let n = 0
    const made = new Map<string, number[]>()
    const batch = (order: string[]) =>
      order.flatMap((id) => {
        made.set(id, [...(made.get(id) ?? []), ++n])
        return logins(id, [n])
      })
    const rounds = Array.from({ length: 15 }, () =>
      Promise.all([
        store.recordLogins(batch(['carol', 'bob', 'alice']), 3),
        recordLogins(before, batch(['alice', 'bob', 'carol']), 3, NOTICES),
        store.recordLogins(batch(['bob', 'alice']), 3),
      ]),
    )
    await Promise.all(rounds) // a deadlock would reject one of them (40P01)
    // Whichever committed last trimmed what every other had committed: the three newest are left.
    for (const id of ['alice', 'bob', 'carol']) {
      const newest = (made.get(id) ?? []).slice(-3).map((k) => `${id}-${k}`)
      expect(await left(store, id)).toEqual(newest)
    }
  })

  it('forgets the sessions it counted of a deleted identity', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob')
    await store.recordLogins([...logins('alice', [1, 2]), ...logins('bob', [1])], 3)
    const c = await client(url)
    const bounds = async () =>
      (await c.query('SELECT identity_id FROM identity_session_bounds ORDER BY 1')).rows.map(
        (r) => r.identity_id,
      )
    expect(await bounds()).toEqual(['alice', 'bob'])
    await c.query("DELETE FROM identities WHERE id = 'alice'")
    expect(await bounds()).toEqual(['bob'])
    expect(await left(store, 'alice')).toEqual([])
  })

  it('ends the sessions of an identity deleted while a batch of it commits, and stores none after', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob', 'carol')
    await store.recordLogins(logins('alice', [1]), 5)
    // A batch of alice is written, not yet committed; her deletion waits for it, then ends them all.
    const batch = await client(url)
    await batch.query('BEGIN')
    await recordLogins(batch, [...logins('alice', [2]), ...logins('bob', [1])], 5, NOTICES)
    const admin = await client(url)
    let deleted = false
    const deletion = admin.query("DELETE FROM identities WHERE id = 'alice'").then(() => {
      deleted = true
    })
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(deleted).toBe(false)
    await batch.query('COMMIT')
    await deletion
    expect(await left(store, 'alice')).toEqual([])
    expect(await left(store, 'bob')).toEqual(['bob-1'])
    // Deleted before its batch commits: the batch waits for the deletion, then refuses its login
    // (as for an unknown identity) and stores the others.
    await store.recordLogins(logins('bob', [2]), 5)
    await admin.query("BEGIN; DELETE FROM identities WHERE id = 'bob'")
    // Its answer is caught at once: it may arrive before the deletion's COMMIT answers.
    const late = store.recordLogins([...logins('bob', [3]), ...logins('carol', [1])], 5).then(
      (ended) => ended,
      (err: unknown) => err,
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    await admin.query('COMMIT')
    expect(await late).toEqual([{ id: 'bob-3', identityId: 'bob', refused: true }])
    expect((await store.repos.sessions.all()).map((s) => s.identityId)).toEqual(['carol'])
    expect(await store.recordLogins(logins('carol', [2]), 5)).toEqual([])
  })

  it('refuses a session naming no identity, however it is inserted, and a change of identity', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice')
    await store.recordLogins(logins('alice', [1]), 5)
    expect(await store.recordLogins(logins('nobody', [1]), 5)).toEqual([
      { id: 'nobody-1', identityId: 'nobody', refused: true },
    ])
    await expect(store.repos.sessions.insertMany([nthSession('nobody', 2)])).rejects.toMatchObject({
      code: 'NOT_FOUND',
    })
    const c = await client(url)
    await expect(
      c.query("UPDATE api_sessions SET identity_id = 'nobody' WHERE id = 'alice-1'"),
    ).rejects.toMatchObject({ code: '23000' })
    expect((await store.repos.sessions.all()).map((s) => s.id)).toEqual(['alice-1'])
  })
})
