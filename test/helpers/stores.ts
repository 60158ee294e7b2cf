import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'

export type StoreKind = 'sqlite' | 'postgres'

/** The PostgreSQL server the tests use (CI sets it); unset, PostgreSQL tests are skipped. */
export const PG_URL = process.env.CTRL_TEST_POSTGRES_URL

/** The stores every store-backed suite runs against. */
export const STORES: StoreKind[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite']

if (!PG_URL) {
  console.info(
    'PostgreSQL tests skipped: set CTRL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres to run them',
  )
}

/** A URL naming another database on the same server. */
export function databaseUrl(name: string): string {
  const url = new URL(PG_URL as string) // only called when PG_URL is set
  url.pathname = `/${name}`
  return url.toString()
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** Creates an empty database of its own; dropped when the test file ends. */
export async function createTestDatabase(): Promise<string> {
  const name = `ctrl_test_${randomBytes(6).toString('hex')}`
  await admin((c) => c.query(`CREATE DATABASE ${name}`))
  created.push(name)
  return databaseUrl(name)
}

const created: string[] = []
afterAll(async () => {
  if (created.length === 0) return
  await admin(async (c) => {
    for (const name of created.splice(0)) {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  })
})

let fileDatabase: Promise<string> | undefined

/** The database of this test file, emptied (schema kept) for each test that asks for it. */
export async function freshPostgresUrl(): Promise<string> {
  if (!fileDatabase) fileDatabase = createTestDatabase()
  const url = await fileDatabase
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      "SELECT 1 FROM information_schema.tables WHERE table_name = 'signers'",
    )
    if (rows.length > 0) {
      // DELETE, not TRUNCATE: these tables hold a few rows, and TRUNCATE makes new files for each
      // table (and what references it) with an fsync at commit, 100-200 ms per test here, where
      // DELETE takes under 15. Referencing tables first: a table added later that references these
      // without ON DELETE CASCADE fails here until it is listed.
      await client.query(`BEGIN;
        DELETE FROM api_sessions;
        DELETE FROM authenticators;
        DELETE FROM identities;
        DELETE FROM auth_policy_signers;
        DELETE FROM auth_policies;
        DELETE FROM signers;
        DELETE FROM audit_events;
        DELETE FROM login_failures;
        DELETE FROM controllers;
        INSERT INTO auth_policies (id, name, created_at, updated_at)
          VALUES ('default', 'Default', now(), now());
        COMMIT`)
    }
  } finally {
    await client.end()
  }
  return url
}

/** A client connected to `url`, added to `clients`: the test ends those when it is done. */
export async function connectedClient(url: string, clients: pg.Client[]): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  clients.push(c)
  return c
}

const quiet = { info: () => {}, warn: () => {} }

/** A fresh, migrated store of the given kind (no admin). */
export async function openTestStore(kind: StoreKind): Promise<Store> {
  const db = kind === 'sqlite' ? ':memory:' : await freshPostgresUrl()
  return openStore(
    { db, poolSize: 4, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
    quiet,
    async () => {},
  )
}
