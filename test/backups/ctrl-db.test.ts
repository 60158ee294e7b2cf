import { execFile } from 'node:child_process'
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { readMigrations } from '../../src/store/migrations.js'
import { migrate } from '../../src/store/sqlite/migrate.js'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { M, plantMissingSigner, signerInPolicy, tempDir } from './fixtures.js'

const root = resolve(import.meta.dirname, '../..')

/** Runs the built `ctrl-db` (as the bin and `npm run ctrl-db` do) with only these settings. */
function ctrlDb(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      ['dist/src/ctrl-db.js', ...args],
      { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0
        done({ code, stdout, stderr })
      },
    )
  })
}

/** A controller serving on a database file, with a signer that a policy names. */
async function runningController() {
  const db = join(tempDir(), 'controller.db')
  const app = await buildTestApp({ config: { dbPath: db } })
  const token = await login(app)
  const ids = await signerInPolicy(app, token)
  return { app, token, db, ...ids }
}

describe('ctrl-db snapshot', () => {
  it("copies a running controller's database (CTRL_DB) into --dir, and the copy checks ok", async () => {
    const { app, token, db, signerId } = await runningController()
    const dir = tempDir()
    const res = await ctrlDb(['snapshot', '--dir', dir], { CTRL_DB: db })
    expect(res.code, res.stderr).toBe(0)
    const files = readdirSync(dir)
    expect(files).toHaveLength(1)
    expect(res.stdout).toContain(join(dir, files[0] as string))
    const copy = new Database(join(dir, files[0] as string), { readonly: true })
    expect(copy.prepare('SELECT id FROM signers WHERE id = ?').get(signerId)).toBeDefined()
    copy.close()
    // The controller kept serving, and writing.
    const created = await caller(app, token)('POST', `${M}/identities`, { name: 'after' })
    expect(created.statusCode).toBe(201)

    const checked = await ctrlDb(['check', join(dir, files[0] as string)])
    expect(checked.code, checked.stdout + checked.stderr).toBe(0)
    expect(checked.stdout).toContain(': ok')
  })

  it('writes beside the database by default and keeps CTRL_SNAPSHOT_KEEP (or --keep) files', async () => {
    const { db } = await runningController()
    for (let i = 0; i < 3; i++) {
      const res = await ctrlDb(['snapshot', '--db', db, '--keep', '2'])
      expect(res.code, res.stderr).toBe(0)
    }
    const dir = join(db, '..', 'snapshots')
    expect(readdirSync(dir).filter((n) => n.endsWith('.db'))).toHaveLength(2)
    const once = await ctrlDb(['snapshot'], { CTRL_DB: db, CTRL_SNAPSHOT_KEEP: '1' })
    expect(once.code, once.stderr).toBe(0)
    expect(readdirSync(dir)).toHaveLength(1)
  })

  it('exits 1 with one line naming the cause: an unwritable folder, no database, PostgreSQL', async () => {
    const { db } = await runningController()
    const blocker = join(tempDir(), 'file')
    writeFileSync(blocker, 'x')
    const unwritable = await ctrlDb(['snapshot', '--db', db, '--dir', join(blocker, 'sub')])
    expect(unwritable.code).toBe(1)
    expect(unwritable.stderr.trim().split('\n')).toHaveLength(1)
    expect(unwritable.stderr).toContain('SNAPSHOT_DIR_NOT_WRITABLE')

    const missing = await ctrlDb(['snapshot', '--db', join(tempDir(), 'none.db')])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/^ctrl-db: no SQLite database at .*none\.db\n$/)

    const postgres = await ctrlDb(['snapshot'], { CTRL_DB: 'postgres://u@127.0.0.1:1/db' })
    expect(postgres.code).toBe(1)
    expect(postgres.stderr).toContain('pg_dump')
  })

  it('exits 2 with the usage for a bad command line or setting', async () => {
    for (const args of [[], ['restore'], ['snapshot', '--bogus'], ['check'], ['check', 'a', 'b']]) {
      const res = await ctrlDb(args)
      expect(res.code, args.join(' ')).toBe(2)
      expect(res.stderr).toContain('usage: ctrl-db')
    }
    const badKeep = await ctrlDb(['snapshot', '--keep', 'zero'], { CTRL_DB: 'x.db' })
    expect(badKeep.code).toBe(2)
    expect(badKeep.stderr).toContain('CTRL_SNAPSHOT_KEEP')
  })
})

describe('ctrl-db check', () => {
  it('exits 1 and lists each problem of a copy with a signer removed from under a policy', async () => {
    const { db, signerId, policyId } = await runningController()
    const dir = tempDir()
    expect((await ctrlDb(['snapshot', '--db', db, '--dir', dir])).code).toBe(0)
    const planted = join(tempDir(), 'planted.db')
    copyFileSync(join(dir, readdirSync(dir)[0] as string), planted)
    plantMissingSigner(planted, signerId)

    const res = await ctrlDb(['check', planted])
    expect(res.code).toBe(1)
    expect(res.stderr.trim().split('\n')).toHaveLength(1)
    expect(res.stderr).toContain('problem(s)')
    expect(res.stdout).toContain('foreign key check: a row of auth_policy_signers')
    expect(res.stdout).toContain(
      `auth policy ${policyId} names signer ${signerId} in primary.extJwt.allowedSigners, which does not exist`,
    )
  })

  it('checks a snapshot from before the JWT enrollment migration (007) as it is', async () => {
    const file = join(tempDir(), 'old.db')
    const db = new Database(file)
    migrate(db, undefined, readMigrations().slice(0, 6))
    db.prepare(
      `INSERT INTO identities (id, name, is_admin, created_at, updated_at)
       VALUES ('a', 'admin', 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
    ).run()
    db.close()
    const res = await ctrlDb(['check', file])
    expect(res.code, res.stdout + res.stderr).toBe(0)
    expect(res.stdout).toContain(': ok')
  })

  it('exits 1 for a file that is not a database, and 2 for one that does not exist', async () => {
    const junk = join(tempDir(), 'junk.db')
    writeFileSync(junk, 'not a database at all, just some text that is long enough'.repeat(100))
    const res = await ctrlDb(['check', junk])
    expect(res.code).toBe(1)
    expect(res.stderr.trim().split('\n')).toHaveLength(1)
    const none = await ctrlDb(['check', join(tempDir(), 'none.db')])
    expect(none.code).toBe(2)
  })
})
