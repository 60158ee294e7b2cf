import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import type { Store, UnitOfWork } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { CHANNEL } from '../../src/store/postgres/notifications.js'
import { identityRecord, insertIdentities, logins, nthSession } from '../helpers/records.js'
import { connectedClient, freshPostgresUrl, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// Another client of the same database that locks rows in the other order than the controller
// does: an instance of an older release during a rolling upgrade, say. It waits 10 s before it
// looks for a deadlock, the controller's connections the server's default 1 s, and it asks for its
// second row well within that second: the server rolls back the controller's side.
class OtherClient {
  private constructor(private readonly client: pg.Client) {}

  static async open(url: string): Promise<OtherClient> {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query("SET deadlock_timeout = '10s'")
    return new OtherClient(client)
  }

  /** Begins a transaction holding a row of `table`. */
  async hold(table: string, id: string, key = 'id'): Promise<void> {
    await this.client.query('BEGIN')
    await this.client.query(`SELECT 1 FROM ${table} WHERE ${key} = $1 FOR UPDATE`, [id])
  }

  /** Asks for a second row (it waits while the controller holds it), then commits. */
  async lockThenCommit(table: string, id: string, key = 'id'): Promise<void> {
    await this.client.query(`SELECT 1 FROM ${table} WHERE ${key} = $1 FOR UPDATE`, [id])
    await this.client.query('COMMIT')
  }

  close(): Promise<void> {
    return this.client.end()
  }
}

/** What the store logged as warnings (each collision it runs again is one). */
const warned: { obj: object; msg: string }[] = []
const log = { info: () => {}, warn: (obj: object, msg: string) => warned.push({ obj, msg }) }

let store: Store | undefined
let other: OtherClient | undefined
const clients: pg.Client[] = []
afterEach(async () => {
  warned.length = 0
  await other?.close()
  other = undefined
  for (const c of clients.splice(0)) await c.end()
  await store?.close()
  store = undefined
})

async function open(url: string): Promise<Store> {
  store = await openStore(
    { db: url, poolSize: 4, connectTimeoutMs: 5000, statementTimeoutMs: 20_000 },
    log,
    async () => {},
  )
  return store
}

const client = (url: string) => connectedClient(url, clients)

async function names(url: string): Promise<Record<string, string>> {
  const c = await client(url)
  const { rows } = await c.query('SELECT id, name FROM identities WHERE id IN ($1, $2)', ['a', 'b'])
  return Object.fromEntries(rows.map((r: { id: string; name: string }) => [r.id, r.name]))
}

/** Deadlocks the server has counted in this database (its statistics lag by up to a second). */
async function deadlocks(c: pg.Client): Promise<number> {
  const { rows } = await c.query(
    'SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()',
  )
  return (rows[0] as { n: number }).n
}

/**
 * The other client's outcome: undefined, or its error. Caught at once: vitest would report a
 * rejection as unhandled while the test awaits something else.
 */
function outcome(p: Promise<void>): Promise<unknown> {
  return p.then(
    () => undefined,
    (err: unknown) => err ?? new Error('rejected'),
  )
}

/** Waits until a statement of the controller's (its text LIKE `pattern`) waits for a lock. */
function waitingForLock(watcher: pg.Client, pattern: string): Promise<void> {
  return within(10_000, async () => {
    const { rows } = await watcher.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
         AND wait_event_type = 'Lock' AND query LIKE $1`,
      [pattern],
    )
    expect(rows).toHaveLength(1)
  })
}

/**
 * A unit of work that updates identity a, then b, while the other client holds b and then asks for
 * a: a deadlock on every run. `publish` is sent between the two updates.
 */
function crossing(runs: { n: number }, pending: Promise<unknown>[], otherClient: OtherClient) {
  return async (tx: UnitOfWork) => {
    runs.n++
    if (runs.n > 1) {
      // The first run's is held already; the other client's last transaction ends first.
      await pending.at(-1)
      await otherClient.hold('identities', 'b')
    }
    await tx.identities.update({ ...identityRecord('a'), name: `a from run ${runs.n}` })
    await tx.publish({ entity: 'identity', op: 'upsert', id: `a-${runs.n}` })
    pending.push(outcome(otherClient.lockThenCommit('identities', 'a')))
    await tx.identities.update({ ...identityRecord('b'), name: `b from run ${runs.n}` })
  }
}

describe.runIf(PG_URL)('deadlocks on PostgreSQL', () => {
  it('a unit of work the server rolls back for a deadlock runs again whole; only the run that committed notifies', async () => {
    const url = await freshPostgresUrl()
    const s = await open(url)
    await insertIdentities(s, 'a', 'b')
    const listener = await client(url)
    const heard: string[] = []
    listener.on('notification', (n) => heard.push(n.payload ?? ''))
    await listener.query(`LISTEN ${CHANNEL}`)
    other = await OtherClient.open(url)
    const watcher = await client(url)
    const before = await deadlocks(watcher)

    await other.hold('identities', 'b')
    const runs = { n: 0 }
    const pending: Promise<unknown>[] = []
    await s.transaction(async (tx) => {
      if (runs.n === 0) return crossing(runs, pending, other as OtherClient)(tx)
      // The second run: the other client has its rows (or is about to): no deadlock this time.
      runs.n++
      await tx.identities.update({ ...identityRecord('a'), name: `a from run ${runs.n}` })
      await tx.publish({ entity: 'identity', op: 'upsert', id: `a-${runs.n}` })
      await tx.identities.update({ ...identityRecord('b'), name: `b from run ${runs.n}` })
    })
    expect(await Promise.all(pending)).toEqual(pending.map(() => undefined))

    expect(runs.n).toBe(2)
    expect(await names(url)).toEqual({ a: 'a from run 2', b: 'b from run 2' })
    expect(warned).toEqual([
      {
        obj: { sqlstate: '40P01', attempt: 1 },
        msg: expect.stringContaining('deadlock') as string,
      },
    ])
    // A marker after it: notifications of one connection arrive in commit order.
    await s.transaction((tx) => tx.publish({ entity: 'identity', op: 'upsert', id: 'marker' }))
    await within(5000, async () => expect(heard.some((p) => p.includes('"marker"'))).toBe(true))
    const ids = heard.map((p) => (JSON.parse(p) as { change: { id: string } }).change.id)
    expect(ids).toEqual(['a-2', 'marker'])
    await within(15_000, async () => expect(await deadlocks(watcher)).toBe(before + 1))
  })

  it('a unit of work that deadlocks on every run is refused with 503 and retry-after once the attempts are spent, storing nothing', async () => {
    const url = await freshPostgresUrl()
    const s = await open(url)
    await insertIdentities(s, 'a', 'b')
    other = await OtherClient.open(url)

    await other.hold('identities', 'b')
    const runs = { n: 0 }
    const pending: Promise<unknown>[] = []
    const err = await s.transaction(crossing(runs, pending, other)).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(await Promise.all(pending)).toEqual(pending.map(() => undefined))

    expect(err).toBeInstanceOf(AppError)
    expect(err).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      statusCode: 503,
      headers: { 'retry-after': '1' },
      fieldCause: { field: 'database' },
    })
    expect(runs.n).toBe(4)
    expect(await names(url)).toEqual({ a: 'a', b: 'b' })
  })

  it('a statement outside a unit of work that the server rolls back for a deadlock runs again', async () => {
    const url = await freshPostgresUrl()
    const s = await open(url)
    await insertIdentities(s, 'x')
    await s.repos.sessions.insertMany([0, 1, 2].map((n) => nthSession('x', n)))
    other = await OtherClient.open(url)
    const watcher = await client(url)
    const before = await deadlocks(watcher)

    // The deletion locks x's sessions oldest first: x-1, then x-2, which the other client holds.
    await other.hold('api_sessions', 'x-2')
    const deleting = s.repos.sessions.deleteForIdentityExcept('x', 'x-0')
    await waitingForLock(watcher, 'DELETE FROM api_sessions%')
    const otherDone = outcome(other.lockThenCommit('api_sessions', 'x-1'))

    expect((await deleting).sort()).toEqual(['x-1', 'x-2'])
    expect(await otherDone).toBeUndefined()
    const { rows } = await watcher.query('SELECT id FROM api_sessions ORDER BY id')
    expect(rows).toEqual([{ id: 'x-0' }])
    await within(15_000, async () => expect(await deadlocks(watcher)).toBe(before + 1))
  })
  it('a group commit of logins that the server rolls back for a deadlock runs again, and every login is stored', async () => {
    const url = await freshPostgresUrl()
    const s = await open(url)
    await insertIdentities(s, 'a', 'b')
    await s.recordLogins(logins('a', [1]).concat(logins('b', [1]))) // their bounds' rows exist now
    other = await OtherClient.open(url)
    const watcher = await client(url)
    const before = await deadlocks(watcher)

    // The batch updates the bounds in identity order: a, then b, which the other client holds.
    await other.hold('identity_session_bounds', 'b', 'identity_id')
    const batch = s.recordLogins(logins('a', [2]).concat(logins('b', [2])))
    await waitingForLock(watcher, '%record_logins%')
    const otherDone = outcome(other.lockThenCommit('identity_session_bounds', 'a', 'identity_id'))

    expect(await batch).toEqual([])
    expect(await otherDone).toBeUndefined()
    const { rows } = await watcher.query('SELECT id FROM api_sessions ORDER BY id')
    expect(rows.map((r: { id: string }) => r.id)).toEqual(['a-1', 'a-2', 'b-1', 'b-2'])
    const events = await watcher.query(
      "SELECT count(*)::int AS n FROM audit_events WHERE action = 'login'",
    )
    expect(events.rows[0]).toEqual({ n: 4 })
    await within(15_000, async () => expect(await deadlocks(watcher)).toBe(before + 1))
  })
})
