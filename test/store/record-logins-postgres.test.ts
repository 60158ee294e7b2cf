import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import type { FeedEvent, Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { NOTICE_ID, recordLogins } from '../../src/store/postgres/login-batch.js'
import { insertIdentities, logins } from '../helpers/records.js'
import { createTestDatabase, freshPostgresUrl, PG_URL } from '../helpers/stores.js'
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

  async function client(url: string): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    clients.push(c)
    return c
  }

  it('waits for the lock an instance of any release holds on the identity before trimming', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice')
    const other = await client(url)
    await other.query(`BEGIN; SELECT ${CAP_LOCK.replace('$1', "'alice'")}`)
    let settled = false
    const batch = store.recordLogins(logins('alice', [1]), 2).finally(() => {
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

  it('tells another instance that sessions were opened, and of each identity the cap ended sessions of', async () => {
    const url = await freshPostgresUrl()
    const store = await setup(url, 'alice', 'bob')
    const other = await open(url)
    stores.push(other)
    const heard: FeedEvent[] = []
    const echoed: FeedEvent[] = []
    other.onFeed((e) => heard.push(e))
    store.onFeed((e) => echoed.push(e))
    const opened = { type: 'change', change: { entity: 'session', op: 'upsert', id: '' } }
    // Without a cap nothing ends; with a cap of 1, two of alice's sessions end and none of bob's.
    await store.recordLogins([...logins('alice', [1, 2]), ...logins('bob', [1])])
    await store.recordLogins(logins('alice', [3]), 1)
    await within(1000, async () =>
      expect(heard).toEqual([
        opened,
        opened,
        { type: 'change', change: { entity: 'identity-sessions', op: 'delete', id: 'alice' } },
      ]),
    )
    expect(echoed).toEqual([]) // an instance's own changes are applied where it made them
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
})
