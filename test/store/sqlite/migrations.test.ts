import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { readMigrations } from '../../../src/store/migrations.js'
import { openDatabase } from '../../../src/store/sqlite/connection.js'
import { migrate } from '../../../src/store/sqlite/migrate.js'

const dirs: string[] = []
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'ctrl-db-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('migrations', () => {
  it('applies every file to a fresh database; a second run does nothing', () => {
    const db = new Database(':memory:')
    const files = readMigrations()
    expect(migrate(db)).toBe(files.length)
    expect(db.pragma('user_version', { simple: true })).toBe(files.length)
    expect(migrate(db)).toBe(0)
    db.close()
  })

  it('opens a file database in WAL mode with foreign keys and a sync per commit, creating its folder', () => {
    const path = join(tempDir(), 'nested', 'dir', 'c.db')
    const db = openDatabase(path)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1)
    expect(db.pragma('synchronous', { simple: true })).toBe(2) // FULL: acknowledged is durable
    db.close()
  })

  it('refuses a database newer than the code, with a clear message', () => {
    const path = join(tempDir(), 'c.db')
    const raw = new Database(path)
    raw.pragma('user_version = 999')
    raw.close()
    expect(() => openDatabase(path)).toThrow(/newer than this controller/)
  })

  it('refuses gaps in migration numbers', () => {
    const dir = tempDir()
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, '001_a.sql'), 'SELECT 1;')
    writeFileSync(join(dir, '003_c.sql'), 'SELECT 1;')
    expect(() => readMigrations(dir)).toThrow(/without gaps/)
  })

  it('rolls back every file of a failed run', () => {
    const dir = tempDir()
    writeFileSync(join(dir, '001_a.sql'), 'CREATE TABLE a (x);')
    writeFileSync(join(dir, '002_b.sql'), 'CREATE TABLE oops (;')
    const db = new Database(':memory:')
    expect(() => migrate(db, undefined, readMigrations(dir))).toThrow()
    expect(db.pragma('user_version', { simple: true })).toBe(0)
    expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'a'").get()).toEqual({
      n: 0,
    })
    db.close()
  })
})
