import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { hashToken } from '../../src/identities/session-service.js'
import { newSecret } from '../../src/ids.js'
import { migrationsDir, readMigrations } from '../../src/store/migrations.js'
import { migratePostgres } from '../../src/store/postgres/migrate.js'
import { migrate } from '../../src/store/sqlite/migrate.js'
import { SessionRepository } from '../../src/store/sqlite/session-repository.js'
import { createTestDatabase, STORES } from '../helpers/stores.js'

// The migration that made tokens name their session: sessions stored before it keep working.
const SQLITE_VERSION = 5
const PG_VERSION = 4
const AT = '2026-11-24T08:00:00.000Z'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('the session token migration', () => {
  it('on SQLite keeps every stored session, found by its old token hash only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctrl-mig-'))
    dirs.push(dir)
    const db = new Database(join(dir, 'c.db'))
    const all = readMigrations()
    migrate(db, undefined, all.slice(0, SQLITE_VERSION - 1))
    const token = newSecret()
    db.prepare(
      `INSERT INTO identities (id, name, created_at, updated_at) VALUES ('alice', 'alice', ?, ?)`,
    ).run(AT, AT)
    db.prepare(
      `INSERT INTO api_sessions VALUES ('s1', ?, 'alice', 'updb', '127.0.0.1', ?, ?, ?, ?)`,
    ).run(hashToken(token), AT, AT, AT, AT)
    expect(migrate(db, undefined, all)).toBe(all.length - SQLITE_VERSION + 1)
    const sessions = new SessionRepository(db)
    expect(sessions.getLegacyByTokenHash(hashToken(token))).toMatchObject({
      id: 's1',
      identityId: 'alice',
      legacyToken: true,
      expiresAt: AT,
    })
    expect(sessions.get('s1')?.legacyToken).toBe(true)
    // A session made now is not in the legacy index, and the identity cascade still holds.
    sessions.insert({
      ...(sessions.get('s1') as NonNullable<ReturnType<SessionRepository['get']>>),
      id: 's2',
      tokenHash: hashToken('s2.x'),
      legacyToken: false,
    })
    expect(sessions.getLegacyByTokenHash(hashToken('s2.x'))).toBeUndefined()
    expect(sessions.get('s2')?.legacyToken).toBe(false)
    db.prepare(`DELETE FROM identities WHERE id = 'alice'`).run()
    expect(sessions.count()).toBe(0)
    db.close()
  })

  it.skipIf(!STORES.includes('postgres'))(
    'on PostgreSQL keeps every stored session, found by its old token hash only',
    async () => {
      const client = new pg.Client({ connectionString: await createTestDatabase() })
      await client.connect()
      try {
        const all = readMigrations(join(migrationsDir(), 'postgres'))
        await migratePostgres(client, all.slice(0, PG_VERSION - 1))
        const token = newSecret()
        await client.query(
          `INSERT INTO identities (id, name, created_at, updated_at) VALUES ('alice', 'alice', $1, $1)`,
          [AT],
        )
        await client.query(
          `INSERT INTO api_sessions (id, token_hash, identity_id, authenticator_id, ip_address,
             created_at, updated_at, last_activity_at, expires_at)
           VALUES ('s1', $1, 'alice', 'updb', '127.0.0.1', $2, $2, $2, $2)`,
          [hashToken(token), AT],
        )
        expect(await migratePostgres(client, all)).toBe(all.length - PG_VERSION + 1)
        const legacy = await client.query(
          'SELECT id, legacy_token FROM api_sessions WHERE token_hash = $1 AND legacy_token',
          [hashToken(token)],
        )
        expect(legacy.rows).toEqual([{ id: 's1', legacy_token: true }])
        // New rows default to not legacy, and no longer need a unique token hash.
        await client.query(
          `INSERT INTO api_sessions (id, token_hash, identity_id, authenticator_id, ip_address,
             created_at, updated_at, last_activity_at, expires_at)
           VALUES ('s2', $1, 'alice', 'updb', '127.0.0.1', $2, $2, $2, $2)`,
          [hashToken(token), AT],
        )
        const rows = await client.query('SELECT id, legacy_token FROM api_sessions ORDER BY id')
        expect(rows.rows).toEqual([
          { id: 's1', legacy_token: true },
          { id: 's2', legacy_token: false },
        ])
      } finally {
        await client.end()
      }
    },
  )
})
