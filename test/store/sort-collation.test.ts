import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { openStore } from '../../src/store/open-store.js'
import { AUTH_POLICY_LIST_SPEC } from '../../src/store/sqlite/auth-policy-repository.js'
import { IDENTITY_LIST_SPEC } from '../../src/store/sqlite/identity-repository.js'
import { SIGNER_LIST_SPEC } from '../../src/store/sqlite/signer-repository.js'
import { freshPostgresUrl, PG_URL } from '../helpers/stores.js'

// Lists sort the same on both stores: every text column a list sorts by compares byte-wise on
// PostgreSQL (the C collation), as SQLite's do, whatever the database's default collation.
describe.skipIf(!PG_URL)('sorted text columns on PostgreSQL', () => {
  const clients: pg.Client[] = []
  afterAll(async () => {
    for (const c of clients) await c.end()
  })

  it('have the C collation, for every field a list sorts by', async () => {
    const url = await freshPostgresUrl()
    const quiet = { info: () => {}, warn: () => {} }
    const settings = { db: url, poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 5000 }
    await (await openStore(settings, quiet, async () => {})).close() // migrated
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    clients.push(db)
    for (const [table, spec] of [
      ['signers', SIGNER_LIST_SPEC],
      ['identities', IDENTITY_LIST_SPEC],
      ['auth_policies', AUTH_POLICY_LIST_SPEC],
    ] as const) {
      const columns = Object.values(spec.sortable)
      const { rows } = await db.query<{ column_name: string; collation_name: string | null }>(
        `SELECT column_name, collation_name FROM information_schema.columns
          WHERE table_name = $1 AND column_name = ANY ($2) AND data_type = 'text'`,
        [table, columns],
      )
      expect(rows.length, table).toBeGreaterThan(0)
      for (const row of rows)
        expect(row, `${table}.${row.column_name}`).toMatchObject({ collation_name: 'C' })
    }
  })
})
