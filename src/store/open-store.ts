import { join } from 'node:path'
import type { Store } from './contract.js'
import { migrationsDir, readMigrations } from './migrations.js'
import { openDatabase } from './sqlite/connection.js'
import { SqliteStore } from './sqlite/sqlite-store.js'

export interface StoreSettings {
  /** A SQLite file, `:memory:`, or a `postgres://` / `postgresql://` URL. */
  db: string
  poolSize: number
  connectTimeoutMs: number
  statementTimeoutMs: number
}

export interface StoreLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

export function isPostgresUrl(db: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(db)
}

/**
 * Opens the store `settings.db` names and brings its schema up to date; `underLock` (the bootstrap
 * admin) runs once the schema is there, on PostgreSQL while still holding the migration lock.
 */
export async function openStore(
  settings: StoreSettings,
  log: StoreLog,
  underLock: (store: Store) => Promise<void>,
): Promise<Store> {
  if (isPostgresUrl(settings.db)) {
    // The driver is loaded only for PostgreSQL: the embedded default never needs it.
    const { PgStore } = await import('./postgres/postgres-store.js')
    return PgStore.open({
      settings: {
        url: settings.db,
        poolSize: settings.poolSize,
        connectTimeoutMs: settings.connectTimeoutMs,
        statementTimeoutMs: settings.statementTimeoutMs,
      },
      migrations: readMigrations(join(migrationsDir(), 'postgres')),
      log,
      underLock,
    })
  }
  const db = openDatabase(settings.db, log)
  const store = new SqliteStore(db, () => db.close(), {
    checkpoints: {
      onFailure: (failure) =>
        log.warn(failure, 'WAL checkpoint thread given up; checkpoints run in commits meanwhile'),
      onDiskFailure: (code) =>
        log.warn(
          { code },
          'WAL checkpoint failed on the disk; every request that needs the database is refused until the controller restarts',
        ),
    },
  })
  try {
    await underLock(store)
  } catch (err) {
    await store.close()
    throw err
  }
  return store
}
