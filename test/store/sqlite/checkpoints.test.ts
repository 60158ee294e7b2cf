import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { AppError } from '../../../src/errors.js'
import type {
  BackgroundCheckpointsOptions,
  CheckpointFailure,
} from '../../../src/store/sqlite/checkpoints.js'
import { openDatabase } from '../../../src/store/sqlite/connection.js'
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { fdatasyncOffLoop } from '../../../src/store/sqlite/wal-sync.js'
import { insertIdentities, logins } from '../../helpers/records.js'
import { sqliteFiles } from '../../helpers/sqlite-files.js'

/** Session ids in the database file itself, read without its WAL: only what was checkpointed. */
function inFileItself(path: string): string[] {
  // A copy of the file alone: SQLite finds no WAL beside it.
  const copy = `${path}.alone`
  copyFileSync(path, copy)
  const db = new Database(copy)
  try {
    // The schema itself is in the WAL until a first checkpoint.
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'api_sessions'").get()
    if (table === undefined) return []
    return db
      .prepare<[], { id: string }>('SELECT id FROM api_sessions ORDER BY id')
      .all()
      .map((r) => r.id)
  } finally {
    db.close()
    rmSync(copy)
  }
}

/** Waits (bounded) until `done` holds. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10))
  if (!done()) throw new Error(`timed out waiting for ${what}`)
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A thread running `program` (CommonJS, evaluated) that calls `onExit` when it ends. */
function watched(program: string, onExit: () => void): () => Worker {
  return () => {
    const worker = new Worker(program, { eval: true })
    worker.once('exit', onExit)
    return worker
  }
}

/** Gives `store` (checkpoints every 1 ms) its identity alice and a login that starts its thread. */
async function threadStarted(store: SqliteStore): Promise<void> {
  await insertIdentities(store, 'alice')
  await pause(3)
  await store.recordLogins(logins('alice', [1]))
  expect(store.checkpoints?.running).toBe(true)
}

describe('WAL checkpoints on a thread of their own (SQLite file store)', () => {
  const files = sqliteFiles('ctrl-ckpt-')
  const openStore = (options: Parameters<typeof files.open>[0] = {}) => files.open(options)

  it('copies committed logins into the database file while the store runs', async () => {
    const store = openStore({ checkpoints: { intervalMs: 20 } })
    await insertIdentities(store, 'alice')
    // Far below wal_autocheckpoint's 10,000 pages: the commits alone copy nothing (see below).
    await store.recordLogins(logins('alice', [1, 2]))
    await pause(30)
    await store.recordLogins(logins('alice', [3]))
    await until(() => (store.checkpoints?.stats.checkpoints ?? 0) >= 1, 'a checkpoint')
    expect(inFileItself(files.path)).toEqual(['alice-1', 'alice-2', 'alice-3'])
    expect(store.checkpoints?.running).toBe(true)
    // The store reads and writes on as before.
    await store.recordLogins(logins('alice', [4]))
    expect((await store.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-1',
      'alice-2',
      'alice-3',
      'alice-4',
    ])
  })

  it('asks for no checkpoint before the interval has passed, nor without a write', async () => {
    const store = openStore({ checkpoints: { intervalMs: 60_000 } })
    await insertIdentities(store, 'alice')
    await store.recordLogins(logins('alice', [1]))
    await pause(50)
    expect(store.checkpoints?.running).toBe(false)
    expect(store.checkpoints?.stats.checkpoints).toBe(0)
    expect(inFileItself(files.path)).toEqual([])
  })

  it('ends its thread when the store closes; the WAL is removed and nothing is lost', async () => {
    const store = openStore({ checkpoints: { intervalMs: 1 } })
    await insertIdentities(store, 'alice')
    await pause(5)
    await store.recordLogins(logins('alice', [1]))
    await until(() => store.checkpoints?.running === true, 'the thread')
    await pause(5)
    await store.recordLogins(logins('alice', [2]))
    await files.close(store)
    expect(store.checkpoints?.running).toBe(false)
    // The last connection to close checkpoints everything and removes the WAL, as without a thread.
    expect(existsSync(`${files.path}-wal`)).toBe(false)
    expect(inFileItself(files.path)).toEqual(['alice-1', 'alice-2'])
    const again = openStore({ checkpoints: false })
    expect((await again.repos.sessions.all()).map((s) => s.id).sort()).toEqual([
      'alice-1',
      'alice-2',
    ])
  })

  it('closes the store only once the thread has closed its connection', async () => {
    const events: string[] = []
    const db = openDatabase(files.path)
    const store = new SqliteStore(
      db,
      () => {
        events.push('store connection closed')
        db.close()
      },
      {
        checkpoints: {
          intervalMs: 1,
          // Holds its checkpoint, and takes 50 ms to close.
          spawn: watched(
            "const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => { if (m === 'close') setTimeout(() => process.exit(0), 50) })",
            () => events.push('thread ended'),
          ),
        },
      },
    )
    await threadStarted(store)
    await store.close()
    expect(events).toEqual(['thread ended', 'store connection closed'])
  })

  it('leaves a thread that does not end in time behind, terminated, and closes the store', async () => {
    let ended = false
    const store = openStore({
      checkpoints: {
        intervalMs: 1,
        endWithinMs: 30,
        // Never ends of itself (its port keeps it up).
        spawn: watched("require('node:worker_threads').parentPort.on('message', () => {})", () => {
          ended = true
        }),
      },
    })
    await threadStarted(store)
    await files.close(store)
    await until(() => ended, 'the thread terminated')
  })

  it('closes in a process with nothing else to do: the thread is waited for, the process does not exit under the close', async () => {
    // A command-line tool's shape: open the store, write, close, say so. The built module, as
    // `npm start` and the tools run it (dist/ is built before the tests).
    const openStoreJs = new URL('../../../dist/src/store/open-store.js', import.meta.url).href
    const script = `
      import { openStore } from ${JSON.stringify(openStoreJs)}
      const quiet = { info: () => {}, warn: () => {} }
      const settings = { db: ${JSON.stringify(files.path)}, poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 5000 }
      const store = await openStore(settings, quiet, async () => {})
      // Commits more than 100 ms apart: the second starts the checkpoint thread.
      for (let i = 0; i < 3; i++) {
        await store.transaction(async () => {})
        await new Promise((r) => setTimeout(r, 150))
      }
      if (!store.checkpoints?.running) throw new Error('no checkpoint thread ran')
      await store.close()
      console.log('closed')
    `
    const tool = join(files.dir, 'tool.mjs') // a file: threads of a `-e` process would inherit its input type
    writeFileSync(tool, script)
    const child = spawnSync(process.execPath, [tool], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(child.stderr).toBe('')
    expect(child.stdout.trim()).toBe('closed')
    expect(child.status).toBe(0) // 13 when the event loop emptied while the close was awaited
    // The store's own connection closed last: the WAL was checkpointed and removed.
    expect(existsSync(`${files.path}-wal`)).toBe(false)
  })

  it('stops its thread when a WAL sync fails and the store stops writing', async () => {
    let failSync = false
    const store = openStore({
      syncFile: (fd) =>
        failSync
          ? Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
          : fdatasyncOffLoop(fd),
      checkpoints: { intervalMs: 1 },
    })
    await threadStarted(store)
    failSync = true
    await expect(store.recordLogins(logins('alice', [2]))).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    })
    expect(store.stale).toBe(true)
    expect(store.checkpoints?.running).toBe(false)
  })

  it('with checkpoints: false, starts no thread and leaves checkpoints to the commits', async () => {
    const store = openStore({ checkpoints: false })
    expect(store.checkpoints).toBeUndefined()
    await insertIdentities(store, 'alice')
    await store.recordLogins(logins('alice', [1]))
    expect(inFileItself(files.path)).toEqual([])
  })

  it('starts no thread for a database in memory', async () => {
    const db = openDatabase(':memory:')
    const store = new SqliteStore(db, () => db.close())
    files.track(store)
    expect(store.checkpoints).toBeUndefined()
  })

  describe('a thread that fails is given up, said once, and tried again only later', () => {
    /** A store whose thread is `program` (CommonJS, evaluated); the failures it reports. */
    async function failingStore(
      program: string | (() => never),
      options: BackgroundCheckpointsOptions = {},
    ) {
      const failures: CheckpointFailure[] = []
      const store = openStore({
        checkpoints: {
          ...options,
          intervalMs: 1,
          retryAfterMs: 60_000,
          spawn: typeof program === 'string' ? () => new Worker(program, { eval: true }) : program,
          onFailure: (f) => failures.push(f),
        },
      })
      await insertIdentities(store, 'alice')
      return { store, failures }
    }
    /** Logins go on through the failure, and the thread is not started again meanwhile. */
    async function loginsGoOn(store: SqliteStore, failures: CheckpointFailure[]) {
      for (let n = 10; n < 15; n++) {
        await pause(3)
        await store.recordLogins(logins('alice', [n]))
      }
      expect(failures).toHaveLength(1)
      expect(store.checkpoints?.running).toBe(false)
      expect(store.checkpoints?.stats.failures).toBe(1)
      expect((await store.repos.sessions.all()).length).toBeGreaterThanOrEqual(5)
    }

    it('one that cannot start', async () => {
      const { store, failures } = await failingStore(() => {
        throw Object.assign(new Error('no threads left'), { code: 'ERR_WORKER_INIT_FAILED' })
      })
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      expect(failures).toEqual([
        { reason: 'spawn', code: 'ERR_WORKER_INIT_FAILED', retryInMs: 60_000 },
      ])
      await loginsGoOn(store, failures)
    })

    it('one that ends', async () => {
      const { store, failures } = await failingStore('process.exit(3)')
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      await until(() => failures.length > 0, 'the failure')
      expect(failures).toEqual([{ reason: 'exit', code: 3, retryInMs: 60_000 }])
      await loginsGoOn(store, failures)
    })

    it('one that throws', async () => {
      const { store, failures } = await failingStore(
        "require('node:worker_threads').parentPort.on('message', () => { throw Object.assign(new Error('x'), { code: 'ERR_BROKEN' }) })",
      )
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      await until(() => failures.length > 0, 'the failure')
      expect(failures).toEqual([{ reason: 'error', code: 'ERR_BROKEN', retryInMs: 60_000 }])
      await loginsGoOn(store, failures)
    })

    /** A thread whose checkpoints answer SQLite's error `code`. */
    const answering = (code: string) =>
      `const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => m === 'close' ? parentPort.close() : parentPort.postMessage({ error: '${code}' }))`

    it('one whose checkpoint fails', async () => {
      const { store, failures } = await failingStore(answering('SQLITE_NOMEM'))
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      await until(() => failures.length > 0, 'the failure')
      expect(failures).toEqual([{ reason: 'checkpoint', code: 'SQLITE_NOMEM', retryInMs: 60_000 }])
      await loginsGoOn(store, failures)
      expect(store.stale).toBe(false)
    })

    it('one whose checkpoint fails on the disk: the store stops, as after a failed WAL sync', async () => {
      const disk: string[] = []
      const { store, failures } = await failingStore(answering('SQLITE_IOERR_FSYNC'), {
        onDiskFailure: (code) => disk.push(code),
      })
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      await until(() => failures.length > 0, 'the failure')
      expect(failures).toEqual([
        { reason: 'checkpoint', code: 'SQLITE_IOERR_FSYNC', retryInMs: 60_000 },
      ])
      expect(disk).toEqual(['SQLITE_IOERR_FSYNC'])
      expect(store.stale).toBe(true)
      const refused = await store.recordLogins(logins('alice', [2])).catch((err: unknown) => err)
      expect((refused as AppError).code).toBe('SERVICE_UNAVAILABLE')
      await pause(5)
      expect(store.checkpoints?.running).toBe(false)
    })

    it('one that does not answer within the deadline', async () => {
      const { store, failures } = await failingStore(
        "const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => { if (m === 'close') parentPort.close() })",
        { deadlineMs: 30 },
      )
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      await until(() => failures.length > 0, 'the failure')
      expect(failures).toEqual([{ reason: 'deadline', retryInMs: 60_000 }])
      await loginsGoOn(store, failures)
    })

    it('and a new one is tried once the retry time has passed', async () => {
      let started = 0
      const failures: CheckpointFailure[] = []
      const store = openStore({
        checkpoints: {
          intervalMs: 1,
          retryAfterMs: 30,
          spawn: () => {
            started++
            return new Worker('process.exit(4)', { eval: true })
          },
          onFailure: (f) => failures.push(f),
        },
      })
      await insertIdentities(store, 'alice')
      await pause(3)
      await store.recordLogins(logins('alice', [1]))
      await until(() => failures.length === 1, 'the first failure')
      await store.recordLogins(logins('alice', [2]))
      expect(started).toBe(1)
      await pause(40)
      await store.recordLogins(logins('alice', [3]))
      expect(started).toBe(2)
      await until(() => failures.length === 2, 'the second failure')
    })
  })
})
