import { describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import { openStore } from '../../src/store/open-store.js'
import { logins } from '../helpers/records.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'

// A forced shutdown closes the store under requests still running: what they ask of it then is
// refused as a database that does not answer (503), never as an unexplained 500.

describe.skipIf(!PG_URL)('a PostgreSQL store after it closed', () => {
  it('refuses reads, units of work and login batches with SERVICE_UNAVAILABLE', async () => {
    const url = await createTestDatabase()
    const store = await openStore(
      { db: url, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
      { info: () => {}, warn: () => {} },
      async () => {},
    )
    await store.close()
    const refused = async (work: Promise<unknown>) => {
      const err = await work.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).code).toBe('SERVICE_UNAVAILABLE')
    }
    await refused(store.repos.signers.all())
    await refused(store.transaction((tx) => tx.identities.get('someone')))
    await refused(store.recordLogins(logins('someone', [1]), 3))
  })
})
