import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { migrationsDir, readMigrations } from '../../src/store/migrations.js'
import { PgStore } from '../../src/store/postgres/postgres-store.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// A migration may take longer than a request's statement timeout (a large table), and an instance
// started meanwhile waits for the migration lock that long: neither is cut short at that timeout,
// nor at a lock_timeout the database or role sets (each would fail to start, again and again, the
// migration rolled back every time).

const TIMEOUT_MS = 300

function open(url: string, migrations: ReturnType<typeof readMigrations>, applied: string[]) {
  return PgStore.open({
    settings: { url, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: TIMEOUT_MS },
    migrations,
    log: { info: (o) => applied.push((o as { migration: string }).migration), warn: () => {} },
  })
}

describe.skipIf(!PG_URL)('migrating PostgreSQL past the statement timeout', () => {
  it('applies a migration slower than the timeout, and a second instance waits for it and starts', async () => {
    const url = await createTestDatabase()
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    try {
      const name = new URL(url).pathname.slice(1)
      await db.query(`ALTER DATABASE ${name} SET lock_timeout = '${TIMEOUT_MS}ms'`)
      const released = readMigrations(join(migrationsDir(), 'postgres'))
      const slow = {
        version: released.length + 1,
        name: `${released.length + 1}_slow.sql`,
        sql: `SELECT pg_sleep(${(3 * TIMEOUT_MS) / 1000}); CREATE TABLE slow_marker (id integer)`,
      }
      const migrations = [...released, slow]
      const firstApplied: string[] = []
      const secondApplied: string[] = []
      const first = open(url, migrations, firstApplied)
      // The second starts once the first holds the migration lock (other test files' databases
      // take theirs meanwhile: only this database's counts).
      await within(5000, async () => {
        const held = await db.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        )
        expect(held.rows[0].n).toBeGreaterThan(0)
      })
      const second = open(url, migrations, secondApplied)
      const stores = await Promise.all([first, second])
      try {
        expect(firstApplied).toEqual(migrations.map((m) => m.name))
        expect(secondApplied).toEqual([]) // it waited, then found nothing to do
        const versions = await db.query('SELECT max(version)::int AS v FROM schema_migrations')
        expect(versions.rows[0].v).toBe(slow.version)
        expect((await db.query('SELECT count(*)::int AS n FROM slow_marker')).rows[0].n).toBe(0)
        for (const store of stores) expect(await store.repos.signers.all()).toEqual([])
      } finally {
        await Promise.all(stores.map((s) => s.close()))
      }
    } finally {
      await db.end()
    }
  })
})
