import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { openStore } from '../../src/store/open-store.js'
import { signerRecord } from '../helpers/records.js'
import { freshPostgresUrl, STORES, type StoreKind } from '../helpers/stores.js'

const dir = mkdtempSync(join(tmpdir(), 'ctrl-fingerprint-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const quiet = { info: () => {}, warn: () => {} }

/** A store on a database of its own, and raw SQL on it (what an earlier release could write). */
async function storeWithRawAccess(kind: StoreKind) {
  const db = kind === 'sqlite' ? join(dir, `${Math.random()}.db`) : await freshPostgresUrl()
  const store = await openStore(
    { db, poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
    quiet,
    async () => {},
  )
  const raw = async (sql: string, params: string[]) => {
    if (kind === 'sqlite') {
      const conn = new Database(db)
      try {
        conn.prepare(sql.replaceAll(/\$\d/g, '?')).run(...params)
      } finally {
        conn.close()
      }
    } else {
      const client = new pg.Client({ connectionString: db })
      await client.connect()
      try {
        await client.query(sql, params)
      } finally {
        await client.end()
      }
    }
  }
  return { store, raw }
}

const withCert = (id: string, fingerprint: string) => ({
  ...signerRecord(id),
  jwksEndpoint: null,
  certPem: `-----BEGIN CERTIFICATE-----\n${id}\n-----END CERTIFICATE-----\n`,
  kid: id,
  fingerprint,
})

describe.each(STORES)('one certificate, one signer (%s)', (kind) => {
  it('refuses a second signer with a fingerprint taken, and a change to one', async () => {
    const { store } = await storeWithRawAccess(kind)
    try {
      await store.repos.signers.insert(withCert('a', 'f'.repeat(40)))
      await expect(store.repos.signers.insert(withCert('b', 'f'.repeat(40)))).rejects.toMatchObject(
        {
          code: 'COULD_NOT_VALIDATE',
        },
      )
      await store.repos.signers.insert(withCert('b', 'e'.repeat(40)))
      await expect(
        store.repos.signers.update({ ...withCert('b', 'f'.repeat(40)), name: 'b2' }),
      ).rejects.toMatchObject({ code: 'COULD_NOT_VALIDATE' })
      expect((await store.repos.signers.get('b'))?.fingerprint).toBe('e'.repeat(40))
    } finally {
      await store.close()
    }
  })

  it('still changes two signers that shared a certificate before the check existed', async () => {
    const { store, raw } = await storeWithRawAccess(kind)
    try {
      await store.repos.signers.insert(withCert('a', 'f'.repeat(40)))
      await store.repos.signers.insert(withCert('b', 'e'.repeat(40)))
      await raw('UPDATE signers SET fingerprint = $1 WHERE id = $2', ['f'.repeat(40), 'b'])
      const b = await store.repos.signers.get('b')
      if (!b) throw new Error('b is gone')
      expect(await store.repos.signers.update({ ...b, enabled: false, tags: { x: 'y' } })).toBe(
        true,
      )
      expect((await store.repos.signers.get('b'))?.enabled).toBe(false)
    } finally {
      await store.close()
    }
  })
})
