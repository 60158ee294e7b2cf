import pg from 'pg'
import { describe, expect, it, onTestFinished } from 'vitest'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// A balancer checks readiness often and gives up after a second or so. While a burst holds every
// pooled connection, an instance whose database answers is busy, not down: taking it out of
// service would only add its load to the others'.

describe.skipIf(!PG_URL)('readiness while every pooled connection is busy (PostgreSQL)', () => {
  it('answers 200 without waiting for a pooled connection', async () => {
    const POOL = 2
    const url = await createTestDatabase()
    const app = await buildTestApp({
      storeKind: 'postgres',
      config: { dbPath: url, dbPoolSize: POOL, dbStatementTimeoutMs: 60_000 },
    })
    const call = caller(app, await login(app))

    // Another session holds the audit trail's table: every read of it waits, holding its connection.
    const blocker = new pg.Client({ connectionString: url })
    await blocker.connect()
    onTestFinished(() => blocker.end())
    await blocker.query('BEGIN; LOCK TABLE audit_events IN ACCESS EXCLUSIVE MODE')
    // Activity is read outside that transaction, which would keep its first view of it.
    const watcher = new pg.Client({ connectionString: url })
    await watcher.connect()
    onTestFinished(() => watcher.end())

    const settled: number[] = []
    const reads = Array.from({ length: POOL + 1 }, () =>
      call('GET', '/edge/management/v1/audit-events').then((res) => {
        settled.push(res.statusCode)
        return res
      }),
    )
    // Every pooled connection waits on the lock.
    await within(10_000, async () => {
      const { rows } = await watcher.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND application_name = 'ext-jwt-controller'`,
      )
      expect([rows[0]?.n, settled]).toEqual([POOL, []])
    })

    const ready = await app.inject({ method: 'GET', url: '/health-checks/ready' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toMatchObject({ data: { healthy: true } })
    // Answered while the burst still held every connection.
    expect(settled).toEqual([])

    await blocker.query('COMMIT')
    const answers = await Promise.all(reads)
    expect(answers.map((res) => res.statusCode)).toEqual(Array(POOL + 1).fill(200))
  })
})
