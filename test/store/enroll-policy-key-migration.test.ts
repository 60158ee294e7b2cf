import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { ruleProblems } from '../../src/backups/integrity.js'
import { migrationsDir, readMigrations } from '../../src/store/migrations.js'
import { pgIntegrityFacts } from '../../src/store/postgres/integrity.js'
import { migratePostgres } from '../../src/store/postgres/migrate.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'

// Migration 014 puts a foreign key on signers.enroll_auth_policy_id. A database where a race
// already left a signer naming a deleted policy still upgrades; the key then guards new writes,
// and check-data-integrity names the signer.
const PG_VERSION = 14
const AT = '2026-11-28T08:00:00.000Z'

async function migratedBefore(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: await createTestDatabase() })
  await client.connect()
  const all = readMigrations(join(migrationsDir(), 'postgres'))
  await migratePostgres(client, all.slice(0, PG_VERSION - 1))
  return client
}

async function insertSigner(client: pg.Client, id: string, policyId: string): Promise<void> {
  await client.query(
    `INSERT INTO signers (id, name, enabled, issuer, audience, jwks_endpoint, created_at, updated_at,
       enroll_auth_policy_id)
     VALUES ($1, $1, true, 'https://' || $1 || '.example', 'ziti', 'http://127.0.0.1:1/jwks', $2, $2, $3)`,
    [id, AT, policyId],
  )
}

async function keyValidated(client: pg.Client): Promise<boolean | undefined> {
  const res = await client.query<{ convalidated: boolean }>(
    `SELECT convalidated FROM pg_constraint WHERE conname = 'signers_enroll_auth_policy_id_fkey'`,
  )
  return res.rows[0]?.convalidated
}

describe.runIf(PG_URL)('the enroll policy key migration on PostgreSQL', () => {
  it('upgrades a database holding a signer that names a deleted policy, which the integrity check then names', async () => {
    const client = await migratedBefore()
    try {
      await insertSigner(client, 'dangling', 'gone')
      const all = readMigrations(join(migrationsDir(), 'postgres'))
      expect(await migratePostgres(client, all)).toBe(all.length - PG_VERSION + 1)
      expect(await keyValidated(client)).toBe(false)
      // New writes are held to the key.
      await expect(insertSigner(client, 'new', 'gone')).rejects.toMatchObject({ code: '23503' })
      expect(ruleProblems(await pgIntegrityFacts(client))).toContain(
        'signer dangling enrolls into auth policy gone (enrollAuthPolicyId), which does not exist',
      )
    } finally {
      await client.end()
    }
  })

  it('validates the key at once on a sound database', async () => {
    const client = await migratedBefore()
    try {
      await insertSigner(client, 'sound', 'default')
      await migratePostgres(client, readMigrations(join(migrationsDir(), 'postgres')))
      expect(await keyValidated(client)).toBe(true)
    } finally {
      await client.end()
    }
  })
})
