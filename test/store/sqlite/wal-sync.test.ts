import { fstatSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { AppError } from '../../../src/errors.js'
import { SessionService } from '../../../src/identities/session-service.js'
import { openDatabase } from '../../../src/store/sqlite/connection.js'
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { fdatasyncOffLoop, type SyncFile } from '../../../src/store/sqlite/wal-sync.js'
import { ADMIN_PASSWORD, ADMIN_USER, buildTestApp, caller, login } from '../../helpers/app.js'
import { identityRecord, insertIdentities, logins } from '../../helpers/records.js'
import { sqliteFiles } from '../../helpers/sqlite-files.js'

/** A sync the test settles by hand; records the inode of each file it was asked to sync. */
function heldSync() {
  const calls: { fd: number; ino: number; settle: (err?: Error) => void }[] = []
  const sync: SyncFile = (fd) =>
    new Promise((resolve, reject) => {
      const settle = (err?: Error) => (err ? reject(err) : resolve())
      calls.push({ fd, ino: fstatSync(fd).ino, settle })
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
  const files = sqliteFiles('ctrl-wal-')
  function openStore(syncFile?: SyncFile, at = files.path): SqliteStore {
    return files.open(syncFile ? { syncFile } : {}, at)
  }
  /** A store (at `at`) whose syncs the test settles, with the identity alice. */
  async function heldStore(at = files.path) {
    const { sync, calls } = heldSync()
    const store = openStore(sync, at)
    await insertIdentities(store, 'alice')
    return { store, calls }
  }
  /** Closes `store` and opens the same file again, as a restart does. */
  async function reopen(store: SqliteStore): Promise<SqliteStore> {
    await files.close(store)
    return openStore()
  }

  it('answers a batch only once the WAL is synced, and serves other work meanwhile', async () => {
    const { store, calls } = await heldStore()
    const batch = store.recordLogins(logins('alice', [1, 2]))
    expect(await settled(batch)).toBe(false)
    // Committed and visible, the lock free for the next requests, while the disk is being synced.
    expect(calls).toHaveLength(1)
    expect(calls[0]?.ino).toBe(statSync(`${files.path}-wal`).ino)
    expect((await store.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-1',
      'alice-2',
    ])
    calls[0]?.settle()
    expect(await batch).toEqual([])
  })

  it('closes the WAL file only once a sync in flight ends, when the store closes under it', async () => {
    const { store, calls } = await heldStore()
    const batch = store.recordLogins(logins('alice', [1]))
    expect(await settled(batch)).toBe(false)
    const call = calls[0] as (typeof calls)[number]
    await files.close(store)
    // Still the WAL's descriptor: no other file can take its number while the sync runs.
    expect(fstatSync(call.fd).ino).toBe(call.ino)
    call.settle()
    expect(await batch).toEqual([])
    const after = (() => {
      try {
        return fstatSync(call.fd).ino // a file opened since may have taken the number
      } catch (err) {
        return (err as NodeJS.ErrnoException).code
      }
    })()
    expect(after).not.toBe(call.ino)
    const reopened = openStore()
    expect((await reopened.repos.sessions.all()).map((s) => s.id)).toEqual(['alice-1'])
  })

  it('refuses a batch whose sync failed, and every later call until a restart', async () => {
    const { store, calls } = await heldStore()
    const first = store.recordLogins(logins('alice', [1]))
    expect(await settled(first)).toBe(false)
    calls[0]?.settle()
    await first
    const failed = store.recordLogins(logins('alice', [2])).then(
      () => 'stored',
      (err: unknown) => err,
    )
    expect(await settled(failed)).toBe(false)
    calls[1]?.settle(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    const err = await failed
    // SERVICE_UNAVAILABLE: the batch writer refuses the whole batch instead of retrying each login.
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).code).toBe('SERVICE_UNAVAILABLE')
    expect((err as AppError).statusCode).toBe(503)
    // A later commit could be lost with the batch's pages at recovery: nothing runs any more, and
    // nothing kept is trusted (store.stale), so no cache answers for it either.
    expect(store.stale).toBe(true)
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => 'answered',
        (e: unknown) => (e instanceof AppError ? e.code : e),
      )
    expect(await refused(store.recordLogins(logins('alice', [3])))).toBe('SERVICE_UNAVAILABLE')
    expect(await refused(store.repos.sessions.all())).toBe('SERVICE_UNAVAILABLE')
    expect(await refused(store.transaction(async () => 'written'))).toBe('SERVICE_UNAVAILABLE')
    expect(await refused(store.ping())).toBe('SERVICE_UNAVAILABLE')
    expect(await refused(store.snapshot(join(files.dir, 'copy.db')))).toBe('SERVICE_UNAVAILABLE')
    expect(calls).toHaveLength(2)
    // After a restart the batch answered before the failure is there.
    const reopened = await reopen(store)
    expect(reopened.stale).toBe(false)
    expect((await reopened.repos.sessions.all()).map((s) => s.id)).toContain('alice-1')
  })

  it('answers batches in the order they committed, whichever sync ends first', async () => {
    const { store, calls } = await heldStore()
    const first = store.recordLogins(logins('alice', [1]))
    const second = store.recordLogins(logins('alice', [2]))
    expect(await settled(second)).toBe(false)
    // Both committed, each waiting for its own sync.
    expect(calls).toHaveLength(2)
    calls[1]?.settle()
    expect(await settled(second)).toBe(false)
    expect(await settled(first)).toBe(false)
    calls[0]?.settle()
    expect(await first).toEqual([])
    expect(await second).toEqual([])
  })

  it('commits the next login batch while the one before waits for its sync (the session service)', async () => {
    const { store, calls } = await heldStore()
    const sessions = new SessionService({
      store,
      identity: async () => undefined,
      clock: () => new Date(),
      timeoutMs: 60_000,
    })
    const alice = identityRecord('alice')
    const first = sessions.open(alice, 'updb', '127.0.0.1')
    expect(await settled(first)).toBe(false)
    const second = sessions.open(alice, 'updb', '127.0.0.1')
    expect(await settled(second)).toBe(false)
    // Two batches committed, each waiting for its own sync; a third waits for one of them.
    expect(calls).toHaveLength(2)
    expect(await store.repos.sessions.count()).toBe(2)
    const third = sessions.open(alice, 'updb', '127.0.0.1')
    expect(await settled(third)).toBe(false)
    expect(calls).toHaveLength(2)
    calls[0]?.settle()
    calls[1]?.settle()
    await Promise.all([first, second])
    expect(await settled(third)).toBe(false)
    calls[2]?.settle()
    await third
    expect(await store.repos.sessions.count()).toBe(3)
  })

  it("refuses a later batch whose own sync ended, when an earlier batch's sync failed", async () => {
    const { store, calls } = await heldStore()
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'stored',
        (e: unknown) => (e instanceof AppError ? e.code : e),
      )
    const first = outcome(store.recordLogins(logins('alice', [1])))
    const second = outcome(store.recordLogins(logins('alice', [2])))
    expect(await settled(second)).toBe(false)
    expect(calls).toHaveLength(2)
    // The second batch sits in the WAL behind the first: recovery would stop at the first's
    // missing pages and drop it as well, so it is not answered as stored.
    calls[1]?.settle()
    calls[0]?.settle(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    expect(await first).toBe('SERVICE_UNAVAILABLE')
    expect(await second).toBe('SERVICE_UNAVAILABLE')
    expect(store.stale).toBe(true)
  })

  it('syncs the WAL of the real file when the database is opened through a symbolic link', async () => {
    const link = join(files.dir, 'link.db')
    symlinkSync(files.path, link)
    const { store, calls } = await heldStore(link)
    const batch = store.recordLogins(logins('alice', [1]))
    expect(await settled(batch)).toBe(false)
    expect(calls[0]?.ino).toBe(statSync(`${files.path}-wal`).ino)
    calls[0]?.settle()
    expect(await batch).toEqual([])
  })

  it('keeps every answered batch across a reopen (the default fdatasync)', async () => {
    const store = openStore()
    await insertIdentities(store, 'alice', 'bob')
    for (let n = 1; n <= 3; n++)
      await store.recordLogins([...logins('alice', [n]), ...logins('bob', [n])], 2)
    const reopened = await reopen(store)
    expect((await reopened.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-2',
      'alice-3',
      'bob-2',
      'bob-3',
    ])
  })

  it('leaves other units of work synced on commit (the connection stays at FULL)', async () => {
    const { store, calls } = await heldStore()
    const batch = store.recordLogins(logins('alice', [1]))
    expect(await settled(batch)).toBe(false)
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2) // FULL
    calls[0]?.settle()
    await batch
  })

  it('needs no sync on a database in memory', async () => {
    const { store, calls } = await heldStore(':memory:')
    expect(await store.recordLogins(logins('alice', [1]))).toEqual([])
    expect(calls).toHaveLength(0)
  })
})

describe('a controller whose WAL could not be synced', () => {
  it('refuses the login with 503, then every request that needs the database, until a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctrl-wal-app-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'ctrl.db')
    let failing = false
    const syncFile: SyncFile = (fd) =>
      failing
        ? Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
        : fdatasyncOffLoop(fd)
    const db = openDatabase(path)
    const store = new SqliteStore(db, () => db.close(), { syncFile })
    onTestFinished(() => store.close())
    const app = await buildTestApp({ store })
    const token = await login(app)
    const me = () => caller(app, token)('GET', '/edge/management/v1/current-identity')
    expect((await me()).statusCode).toBe(200)

    failing = true
    const refused = await app.inject({
      method: 'POST',
      url: '/edge/management/v1/authenticate?method=password',
      payload: { username: ADMIN_USER, password: ADMIN_PASSWORD },
    })
    expect(refused.statusCode).toBe(503)
    expect(refused.json().error.code).toBe('SERVICE_UNAVAILABLE')
    expect(refused.headers['zt-session']).toBeUndefined()
    // The session answered before is not served from memory either, and the readiness check fails.
    const after = await me()
    expect(after.statusCode).toBe(503)
    expect(after.json().error.code).toBe('SERVICE_UNAVAILABLE')
    const health = await app.inject({ method: 'GET', url: '/health-checks' })
    expect(health.statusCode).toBe(503)
  })
})
