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

/** What the store logged at info: one line for each statement run again on a new plan. */
const staleRuns: string[] = []
const log = {
  info: (obj: object) => {
    if ('within' in obj) staleRuns.push(String(obj.within))
  },
  warn: () => {},
}

async function open(url: string): Promise<Store> {
  staleRuns.length = 0
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

/** POOL at once: each holds a connection of its own while the others run. */
const everywhere = <T>(work: () => Promise<T>) =>
  Promise.all(Array.from({ length: POOL }, () => work()))

/** signer-1's issuer (signerRecord's). */
const ISSUER = 'https://signer-1.example'

/** Each read of a named statement outside a unit of work. */
const reads = async (s: Store) => [
  (await s.repos.signers.get('signer-1'))?.issuer,
  (await s.repos.signers.getByIssuer(ISSUER))?.id,
  (await s.repos.sessions.get('session-1'))?.identityId,
]
const READ = [ISSUER, 'signer-1', 'alice']

/** A unit of work that reads with a named statement, then writes: renames signer-1. */
const rename = (s: Store, name: string) =>
  s.transaction(async (tx) => {
    const signer = await tx.signers.getForUpdate('signer-1')
    if (!signer) throw new Error('signer-1 is stored')
    await tx.signers.update({ ...signer, name })
    return signer.issuer
  })

/** Prepares every named statement above on every connection of the pool. */
async function prepareEverywhere(s: Store): Promise<void> {
  expect(await everywhere(() => rename(s, 'signer-1'))).toEqual(Array(POOL).fill(ISSUER))
  expect(await everywhere(() => reads(s))).toEqual(Array(POOL).fill(READ))
}

/** How many signer writes the database has counted (each bumps it once). */
async function signerWrites(c: pg.Client): Promise<number> {
  const { rows } = await c.query('SELECT version::int AS n FROM signer_list_version')
  return (rows[0] as { n: number }).n
}

describe.runIf(PG_URL)('statements prepared before a later release migrates', () => {
  it('a column added to the signers and sessions under a running instance fails none of its reads', async () => {
    const { url, s } = await seeded()
    await prepareEverywhere(s)
    const later = await connectedClient(url, clients)
    await later.query(`ALTER TABLE signers ADD COLUMN later_field text NOT NULL DEFAULT 'x';
      ALTER TABLE api_sessions ADD COLUMN later_field integer`)
    for (let i = 0; i < 3; i++) {
      expect(await everywhere(() => reads(s))).toEqual(Array(POOL).fill(READ))
      expect(await everywhere(() => rename(s, `name ${i}`))).toHaveLength(POOL)
    }
    // The statements name their columns: none had to run again.
    expect(staleRuns).toEqual([])
  })

  it("a column's type or collation changed under a running instance fails no read, and runs no write twice", async () => {
    const { url, s } = await seeded()
    await prepareEverywhere(s)
    const later = await connectedClient(url, clients)
    // As migration 018 did to two columns (their collation): the statements' result type changes.
    await later.query(`ALTER TABLE signers ALTER COLUMN claims_property TYPE varchar(200);
      ALTER TABLE api_sessions ALTER COLUMN ip_address TYPE text COLLATE "POSIX"`)
    // Reads first, on every connection: each runs once more unprepared, its connection dropped.
    for (let i = 0; i < 3; i++) {
      expect(await everywhere(() => reads(s))).toEqual(Array(POOL).fill(READ))
    }
    expect(staleRuns.length).toBeGreaterThan(0)
    expect(new Set(staleRuns)).toEqual(new Set(['statement']))

    // Units of work first this time: each runs again whole on another connection, and commits once.
    await prepareEverywhere(s)
    staleRuns.length = 0
    await later.query('ALTER TABLE signers ALTER COLUMN claims_property TYPE varchar(300)')
    const before = await signerWrites(later)
    for (let i = 0; i < 3; i++) {
      expect(await everywhere(() => rename(s, `name ${i}`))).toEqual(Array(POOL).fill(ISSUER))
    }
    expect(await signerWrites(later)).toBe(before + 3 * POOL)
    expect(staleRuns.length).toBeGreaterThan(0)
    expect(new Set(staleRuns)).toEqual(new Set(['unit of work']))
    expect((await s.repos.signers.get('signer-1'))?.name).toBe('name 2')
    expect(await everywhere(() => reads(s))).toEqual(Array(POOL).fill(READ))
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
