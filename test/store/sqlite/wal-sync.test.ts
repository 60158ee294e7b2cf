import { fstatSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AppError } from '../../../src/errors.js'
import { openDatabase } from '../../../src/store/sqlite/connection.js'
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import type { SyncFile } from '../../../src/store/sqlite/wal-sync.js'
import { insertIdentities, logins } from '../../helpers/records.js'

/** A sync the test settles by hand; records the inode of each file it was asked to sync. */
function heldSync() {
  const calls: { ino: number; settle: (err?: Error) => void }[] = []
  const sync: SyncFile = (fd) =>
    new Promise((resolve, reject) => {
      calls.push({ ino: fstatSync(fd).ino, settle: (err) => (err ? reject(err) : resolve()) })
    })
  return { sync, calls }
}

/** Whether a promise has settled after the event loop ran a few turns. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false
  p.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
  return done
}

describe('login batches on a file database: the WAL synced off the event loop', () => {
  let dir: string
  let path: string
  const open: SqliteStore[] = []
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctrl-wal-'))
    path = join(dir, 'ctrl.db')
  })
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  function openStore(syncFile?: SyncFile): SqliteStore {
    const db = openDatabase(path)
    const store = new SqliteStore(db, () => db.close(), syncFile ? { syncFile } : {})
    open.push(store)
    return store
  }

  it('answers a batch only once the WAL is synced, and serves other work meanwhile', async () => {
    const { sync, calls } = heldSync()
    const store = openStore(sync)
    await insertIdentities(store, 'alice')
    const batch = store.recordLogins(logins('alice', [1, 2]))
    expect(await settled(batch)).toBe(false)
    // Committed and visible, the lock free for the next requests, while the disk is being synced.
    expect(calls).toHaveLength(1)
    expect(calls[0]?.ino).toBe(statSync(`${path}-wal`).ino)
    expect((await store.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-1',
      'alice-2',
    ])
    calls[0]?.settle()
    expect(await batch).toEqual([])
  })

  it('refuses a batch whose sync failed as unavailable, and syncs later batches on commit', async () => {
    const { sync, calls } = heldSync()
    const store = openStore(sync)
    await insertIdentities(store, 'alice')
    const failed = store.recordLogins(logins('alice', [1])).then(
      () => 'stored',
      (err: unknown) => err,
    )
    expect(await settled(failed)).toBe(false)
    calls[0]?.settle(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    const err = await failed
    // SERVICE_UNAVAILABLE: the batch writer refuses the whole batch instead of retrying each login.
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).code).toBe('SERVICE_UNAVAILABLE')
    expect((err as AppError).statusCode).toBe(503)
    // The next batch commits with SQLite's own sync: answered without asking for another.
    expect(await store.recordLogins(logins('alice', [2]))).toEqual([])
    expect(calls).toHaveLength(1)
    await store.close()
    open.splice(0)
    const reopened = openStore()
    expect((await reopened.repos.sessions.all()).map((s) => s.id)).toContain('alice-2')
  })

  it('keeps every answered batch across a reopen (the default fdatasync)', async () => {
    const store = openStore()
    await insertIdentities(store, 'alice', 'bob')
    for (let n = 1; n <= 3; n++)
      await store.recordLogins([...logins('alice', [n]), ...logins('bob', [n])], 2)
    await store.close()
    open.splice(0)
    const reopened = openStore()
    expect((await reopened.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-2',
      'alice-3',
      'bob-2',
      'bob-3',
    ])
  })

  it('leaves other units of work synced on commit (the connection stays at FULL)', async () => {
    const { sync, calls } = heldSync()
    const store = openStore(sync)
    await insertIdentities(store, 'alice')
    const batch = store.recordLogins(logins('alice', [1]))
    expect(await settled(batch)).toBe(false)
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2) // FULL
    calls[0]?.settle()
    await batch
  })

  it('needs no sync on a database in memory', async () => {
    const { sync, calls } = heldSync()
    const db = openDatabase(':memory:')
    const store = new SqliteStore(db, () => db.close(), { syncFile: sync })
    open.push(store)
    await insertIdentities(store, 'alice')
    expect(await store.recordLogins(logins('alice', [1]))).toEqual([])
    expect(calls).toHaveLength(0)
  })
})
