import pg from 'pg'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { FeedEvent, StoreChange } from '../../src/store/contract.js'
import {
  CHANNEL,
  ChangeListener,
  PING_INTERVAL_MS,
} from '../../src/store/postgres/notifications.js'
import { PgProxy } from '../helpers/pg-proxy.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// The listening connection can go silent rather than fail: the network drops its packets, or the
// server's backend stops. Neither an error nor a notification arrives; only the ping tells.

describe.skipIf(!PG_URL)('the change listener on a silent connection (PostgreSQL)', () => {
  let url: string
  let proxy: PgProxy | undefined
  let listener: ChangeListener | undefined
  let admin: pg.Client | undefined
  beforeAll(async () => {
    url = await createTestDatabase()
  })
  afterEach(async () => {
    await listener?.close()
    await proxy?.close()
    await admin?.end()
    listener = proxy = admin = undefined
  })

  /** A listener connected through a new proxy, recording what it reports and logs at warn. */
  async function listening() {
    proxy = new PgProxy(new URL(url))
    const via = await proxy.start()
    const events: (FeedEvent & { at: number })[] = []
    const warnings: object[] = []
    listener = new ChangeListener(
      // A statement timeout far past the bound under test: only the ping can notice in time.
      { url: via, poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 20_000 },
      'this-instance',
      { warn: (obj) => warnings.push(obj), info: () => {} },
    )
    await listener.start()
    // What it reports once listening (start-up itself reports `fresh`).
    listener.on((event) => events.push({ ...event, at: Date.now() }))
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
    const client = admin
    const notify = (change: StoreChange) =>
      client.query('SELECT pg_notify($1, $2)', [
        CHANNEL,
        JSON.stringify({ from: 'another-instance', change }),
      ])
    return { listener, proxy, events, warnings, notify }
  }

  const change: StoreChange = { entity: 'signer', op: 'upsert', id: 'signer-1' }

  it('hears another instance through the proxy, and its own marked as its own', async () => {
    const { listener, events, notify } = await listening()
    expect(listener.stale).toBe(false)
    const own = { ...change, id: 'own' }
    await admin?.query('SELECT pg_notify($1, $2)', [
      CHANNEL,
      JSON.stringify({ from: 'this-instance', change: own }),
    ])
    await notify(change)
    await within(2000, async () => expect(events).toHaveLength(2))
    expect(events[0]).toMatchObject({ type: 'change', change: own, own: true })
    expect(events[1]).toMatchObject({ type: 'change', change, own: false })
  })

  it('reports stale about a second after its connection goes silent, then fresh on a new one', async () => {
    const { listener, proxy, events, warnings, notify } = await listening()
    // A ping answered since the last tick: the silence starts with nothing in flight.
    await new Promise((r) => setTimeout(r, PING_INTERVAL_MS + 100))
    const frozenAt = Date.now()
    expect(proxy.freeze()).toBe(1)
    // A change made now is never delivered on the frozen connection.
    await notify(change)
    await within(5000, async () => expect(events.map((e) => e.type)).toContain('stale'))
    const stale = events.find((e) => e.type === 'stale') as { at: number }
    // Two ping intervals at most (one to send the ping that goes unanswered, one to miss it), and
    // far below the 21 s of the driver's query timeout; slack for a busy test machine's timers.
    expect(stale.at - frozenAt).toBeLessThan(2 * PING_INTERVAL_MS + 1000)
    expect(listener.stale).toBe(true)
    expect(events.some((e) => e.type === 'change')).toBe(false)
    expect(warnings).toContainEqual({ reason: 'ping unanswered' })

    // It connects again through the proxy (a new connection is forwarded) and says so.
    await within(5000, async () => expect(listener.stale).toBe(false))
    expect(events.map((e) => e.type)).toEqual(['stale', 'fresh'])
    await notify(change)
    await within(2000, async () => expect(events.map((e) => e.type)).toContain('change'))
  })

  it('stays fresh while the server answers its pings, however long it listens', async () => {
    const { listener, events } = await listening()
    await new Promise((r) => setTimeout(r, 3 * PING_INTERVAL_MS))
    expect(listener.stale).toBe(false)
    expect(events).toEqual([])
  })
})
