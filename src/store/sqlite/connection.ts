import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { MigrationLog } from '../migrations.js'
import { migrate } from './migrate.js'

export type Db = Database.Database

/** The page cache of each connection, in KiB (SQLite's `cache_size`, negative: a size, not pages). */
export const PAGE_CACHE_KIB = 2048

/** Opens (creating if needed) the database, sets its pragmas and applies migrations. */
export function openDatabase(path: string, log?: MigrationLog): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path)
  try {
    if (path !== ':memory:') db.pragma('journal_mode = WAL')
    db.pragma('foreign_keys = ON')
    // better-sqlite3 builds SQLite with a 16 MB page cache per connection, all of it resident once
    // the file has grown past it (every page read stays). The pages a controller reads again and
    // again (the indexes' upper levels, the last pages of the tables it appends to) fit in far
    // less; the others come from the kernel's page cache, which the process's memory does not
    // count. 4 MB took 10 to 12 MB off a busy controller's resident memory (170 against 158 and
    // 160 MB after 50,000 logins and 300,000 mixed requests), 2 MB another 1.5 to 3.5 MB (143.9
    // against 145.4 after 400,000), at no cost to logins measured side by side (1.01 the rate).
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`)
    // FULL: each commit's WAL is synced before the write is acknowledged, so a signer, identity or
    // session the API answered for survives a power cut (NORMAL syncs only at checkpoints: it
    // would keep the file sound but could lose the last acknowledged writes). Logins share one
    // commit per group, so the sync is paid once per group, not once per login.
    db.pragma('synchronous = FULL')
    // The WAL is copied back into the file (a checkpoint, with its fsyncs) every 10,000 pages
    // (40 MB) instead of every 1,000: each index page a login dirties is then copied once per many
    // commits instead of once per few, about a third of a login's commit cost.
    if (path !== ':memory:') db.pragma('wal_autocheckpoint = 10000')
    migrate(db, log)
  } catch (err) {
    db.close()
    throw err
  }
  return db
}
