import type pg from 'pg'
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { openStore } from '../../src/store/open-store.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'

// Readiness asks the store whether its database answers. A pool at work (every connection busy,
// but handed out and taken back) is a busy instance, answered from the notification connection;
// a pool whose every connection has been held past the statement timeout is not at work.

const quiet = { info: () => {}, warn: () => {} }
const STATEMENT_TIMEOUT_MS = 400

describe.skipIf(!PG_URL)('the PostgreSQL store ping', () => {
  let url: string
  beforeAll(async () => {
    url = await createTestDatabase()
  })

  it('answers while the pool is at work, and fails once its connections are held past a statement timeout', async () => {
    const store = await openStore(
      { db: url, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: STATEMENT_TIMEOUT_MS },
      quiet,
      async () => {},
    )
    onTestFinished(() => store.close())
    const pool = (store as unknown as { pool: pg.Pool }).pool // the store's own pool, as a leak would hold it
    const held = [await pool.connect(), await pool.connect()]
    // Every connection is out, handed out just now: the pool is at work.
    await expect(store.ping()).resolves.toBeUndefined()

    // Held past the longest a statement runs, with none handed out or taken back meanwhile.
    await new Promise((r) => setTimeout(r, 2 * STATEMENT_TIMEOUT_MS))
    await expect(store.ping()).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' })

    for (const client of held) client.release()
    await expect(store.ping()).resolves.toBeUndefined()
  })
})
