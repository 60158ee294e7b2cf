import type pg from 'pg'
import type { Migration, MigrationLog } from '../migrations.js'
import { mapPgError } from './errors.js'

/** One key for every instance of the controller sharing a database. */
const LOCK_KEY = 0x6374726c // "ctrl"

/**
 * Applies the pending migrations in one transaction while holding a session advisory lock, then
 * runs `underLock` (the bootstrap admin) before releasing it: instances starting together on an
 * empty database migrate it, and create the admin, exactly once. A database whose schema is newer
 * than the code is refused.
 */
export async function migratePostgres(
  client: pg.ClientBase,
  migrations: Migration[],
  log?: MigrationLog,
  underLock?: () => Promise<void>,
): Promise<number> {
  await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY])
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`)
    const res = await client.query<{ v: number | null }>(
      'SELECT max(version) AS v FROM schema_migrations',
    )
    const current = res.rows[0]?.v ?? 0
    const latest = migrations.length
    if (current > latest) {
      throw new Error(
        `the database schema is version ${current}, newer than this controller knows (${latest}); ` +
          'run a newer controller or restore a backup',
      )
    }
    const pending = migrations.filter((m) => m.version > current)
    if (pending.length > 0) {
      await client.query('BEGIN')
      try {
        for (const m of pending) {
          await client.query(m.sql)
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
            m.version,
            m.name,
          ])
          log?.info({ migration: m.name }, 'migration applied')
        }
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        throw err
      }
    }
    await underLock?.()
    return pending.length
  } catch (err) {
    throw mapPgError(err)
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {})
  }
}
