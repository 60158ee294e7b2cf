import { type MigrationLog, readMigrations } from '../migrations.js'
import type { Db } from './connection.js'

/** Applies every migration above `user_version`, all in one transaction. */
export function migrate(db: Db, log?: MigrationLog, migrations = readMigrations()): number {
  const current = db.pragma('user_version', { simple: true }) as number // the pragma is an integer
  const latest = migrations.length
  if (current > latest) {
    throw new Error(
      `the database schema is version ${current}, newer than this controller knows (${latest}); ` +
        'run a newer controller or restore a backup',
    )
  }
  const pending = migrations.filter((m) => m.version > current)
  db.transaction(() => {
    for (const m of pending) {
      db.exec(m.sql)
      db.pragma(`user_version = ${m.version}`)
      log?.info({ migration: m.name }, 'migration applied')
    }
  })()
  return pending.length
}
