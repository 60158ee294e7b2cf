import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

export type Db = Database.Database

export interface MigrationLog {
  info(obj: object, msg: string): void
}

export interface Migration {
  version: number
  name: string
  sql: string
}

/** The migrations folder sits at the package root, whether we run from src/ or from dist/src/. */
export function migrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'migrations')
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate
    dir = dirname(dir)
  }
  throw new Error('migrations folder not found beside package.json')
}

export function readMigrations(dir = join(migrationsDir(), 'sqlite')): Migration[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const migrations: Migration[] = []
  for (const [index, file] of files.entries()) {
    const match = /^(\d{3})_[\w-]+\.sql$/.exec(file)
    if (!match) throw new Error(`migration file name must look like 001_name.sql: ${file}`)
    const version = Number(match[1])
    if (version !== index + 1) {
      throw new Error(`migrations must be numbered 1, 2, 3... without gaps or duplicates: ${file}`)
    }
    migrations.push({ version, name: file, sql: readFileSync(join(dir, file), 'utf8') })
  }
  return migrations
}

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
