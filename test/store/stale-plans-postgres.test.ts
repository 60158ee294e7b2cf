import type pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { isStalePlan } from '../../src/store/postgres/retry.js'
import { insertIdentities, sessionRecord, signerRecord } from '../helpers/records.js'
import { connectedClient, createTestDatabase, PG_URL } from '../helpers/stores.js'

// A rolling upgrade: this instance keeps serving while a later release's migration changes the
// tables under it. The instance's connections have prepared their statements already; the server
// refuses to run a prepared statement whose result's columns changed ('cached plan must not change
// result type'). No request may fail for it.

const POOL = 4

let store: Store | undefined
const clients: pg.Client[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end()
  await store?.close()
  store = undefined
})

const log = { info: () => {}, warn: () => {} }

async function open(url: string): Promise<Store> {
  store = await openStore(
    { db: url, poolSize: POOL, connectTimeoutMs: 5000, statementTimeoutMs: 20_000 },
    log,
    async () => {},
  )
  return store
}

const SESSION = sessionRecord('alice', 'session-1', '2026-12-01T08:00:00.000Z', {
  expiresAt: '2099-01-01T00:00:00.000Z',
})

async function seeded(): Promise<{ url: string; s: Store }> {
  const url = await createTestDatabase()
  const s = await open(url)
  await insertIdentities(s, 'alice')
  await s.transaction(async (tx) => {
    await tx.signers.insert(signerRecord('signer-1'))
    await tx.sessions.insertMany([SESSION])
  })
  return { url, s }
}

/**
 * Every read that uses a named statement, on every connection of the pool at once (each of the
 * POOL concurrent rounds holds a connection of its own): outside a unit of work and within one.
 */
async function readEverywhere(s: Store): Promise<unknown[]> {
  // The unit of work first: on a connection whose plans went stale, nothing else ran before it.
  const round = async () => [
    await s.transaction(async (tx) => (await tx.signers.getForUpdate('signer-1'))?.issuer),
    (await s.repos.signers.get('signer-1'))?.name,
    (await s.repos.signers.getByIssuer('https://signer-1.example'))?.id,
    (await s.repos.sessions.get('session-1'))?.identityId,
  ]
  return Promise.all(Array.from({ length: POOL }, round))
}

const EXPECTED = Array.from({ length: POOL }, () => [
  'https://signer-1.example',
  'signer-1',
  'signer-1',
  'alice',
])

describe.runIf(PG_URL)('statements prepared before a later release migrates', () => {
  it('a column added to the signers and sessions under a running instance fails none of its reads', async () => {
    const { url, s } = await seeded()
    expect(await readEverywhere(s)).toEqual(EXPECTED)
    const later = await connectedClient(url, clients)
    await later.query(`ALTER TABLE signers ADD COLUMN later_field text NOT NULL DEFAULT 'x';
      ALTER TABLE api_sessions ADD COLUMN later_field integer`)
    for (let i = 0; i < 3; i++) expect(await readEverywhere(s)).toEqual(EXPECTED)
  })

  it("a column's type or collation changed under a running instance fails none of its reads", async () => {
    const { url, s } = await seeded()
    expect(await readEverywhere(s)).toEqual(EXPECTED)
    const later = await connectedClient(url, clients)
    // As migration 018 did to two columns (their collation): the statements' result type changes.
    await later.query(`ALTER TABLE signers ALTER COLUMN claims_property TYPE varchar(200);
      ALTER TABLE api_sessions ALTER COLUMN ip_address TYPE text COLLATE "POSIX"`)
    for (let i = 0; i < 3; i++) expect(await readEverywhere(s)).toEqual(EXPECTED)
    // A write within a unit of work after it, on a connection that read before.
    await s.transaction(async (tx) => {
      const signer = await tx.signers.getForUpdate('signer-1')
      if (!signer) throw new Error('signer-1 is stored')
      await tx.signers.update({ ...signer, name: 'renamed' })
    })
    expect((await s.repos.signers.get('signer-1'))?.name).toBe('renamed')
  })

  it('tells a stale plan from any other statement the server does not support', async () => {
    const url = await createTestDatabase()
    const c = await connectedClient(url, clients)
    await c.query('CREATE TABLE t (a integer)')
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (err: unknown) => err,
      )
    const named = { name: 'read-t', text: 'SELECT * FROM t' }
    await c.query(named)
    await c.query('ALTER TABLE t ADD COLUMN b integer')
    const stale = await failure(c.query(named))
    expect(stale).toMatchObject({ code: '0A000' })
    expect(isStalePlan(stale, true)).toBe(true)
    expect(isStalePlan(stale, false)).toBe(false)
    // Another 0A000: running it again, anywhere, fails the same way.
    const unsupported = await failure(c.query('SELECT count(*) FROM t FOR UPDATE'))
    expect(unsupported).toMatchObject({ code: '0A000' })
    expect(isStalePlan(unsupported, true)).toBe(false)
  })
})
