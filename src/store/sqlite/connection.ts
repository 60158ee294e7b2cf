import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { MigrationLog } from '../migrations.js'
import { migrate } from './migrate.js'

export type Db = Database.Database

/** Opens (creating if needed) the database, sets its pragmas and applies migrations. */
export function openDatabase(path: string, log?: MigrationLog): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path)
  try {
    if (path !== ':memory:') db.pragma('journal_mode = WAL')
    db.pragma('foreign_keys = ON')
    db.pragma('synchronous = NORMAL')
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
