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
    migrate(db, log)
  } catch (err) {
    db.close()
    throw err
  }
  return db
}
