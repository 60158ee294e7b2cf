import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { PAGE_CACHE_KIB } from './connection.js'

/**
 * WAL checkpoints on a thread of their own.
 *
 * SQLite copies the WAL back into the database file (a checkpoint, with a sync of each file) in
 * the commit that takes the WAL past `wal_autocheckpoint` pages: on the one connection, that is on
 * the event loop. Under a stream of logins that commit took 12 to 21 ms every few thousand logins,
 * growing with the file, and every request waited behind it. Here a connection of its own, on a
 * worker thread, runs a PASSIVE checkpoint (it never waits for the writer, and the writer never
 * waits for it) whenever the store has written and the last one is at least `intervalMs` old.
 * The connection's own `wal_autocheckpoint` stays as it is: it still restarts the WAL when the
 * thread cannot keep up or is gone, and then finds most pages already copied.
 *
 * Paired RS256 logins of distinct tokens on two SQLite controllers (32 connections, five rounds of
 * six turns, both orders): about 1.03 times the logins a second of checkpoints in the commit, and
 * the ten longest commits of every thousand 10 to 25 ms in all instead of 29 to 65.
 *
 * A checkpoint is never needed for durability (a commit is durable once its WAL is synced) nor for
 * correctness: a thread that fails (it cannot start, errs, exits, answers with an error, or takes
 * longer than `deadlineMs` over one checkpoint) is given up, told to `onFailure`, and tried again
 * no sooner than `retryAfterMs` later; meanwhile checkpoints run in the commits, as before. A
 * checkpoint that failed on the disk (its WAL sync, say) is also told to `onDiskFailure`: the
 * store then stops writing, as after a failed WAL sync of its own (see SqliteStore.unsound).
 */

/** The thread's whole program (CommonJS, evaluated as given). */
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.path, { fileMustExist: true, timeout: 1000 })
db.pragma('synchronous = FULL')
db.pragma('cache_size = -' + workerData.cacheKib)
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close()
    parentPort.close()
    return
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)')
    parentPort.postMessage({ busy: result.busy, log: result.log, checkpointed: result.checkpointed })
  } catch (err) {
    parentPort.postMessage({ error: typeof err?.code === 'string' ? err.code : 'UNKNOWN' })
  }
})
`

/** Where better-sqlite3 is, for the thread's `require`. */
const BETTER_SQLITE3 = createRequire(import.meta.url).resolve('better-sqlite3')

/** Why the thread was given up. */
export type CheckpointFailureReason = 'spawn' | 'error' | 'exit' | 'checkpoint' | 'deadline'

export interface CheckpointFailure {
  reason: CheckpointFailureReason
  /** SQLite's or Node's error code, or the thread's exit code. */
  code?: string | number
  /** How long checkpoints run in the commits before a new thread is tried (ms). */
  retryInMs: number
}

/** One checkpoint's answer, as SQLite's `wal_checkpoint` pragma gives it. */
interface Answer {
  busy?: number
  log?: number
  checkpointed?: number
  error?: string
}

/**
 * SQLite's codes for a file that could not be read, written or synced, or that reads back wrong: a
 * WAL sync that failed here is the same loss WalSync guards against (see SqliteStore.unsound).
 */
export function isDiskFailure(code: string): boolean {
  return code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_CORRUPT')
}

export interface BackgroundCheckpointsOptions {
  /** The least time between two checkpoints (100 ms). */
  intervalMs?: number
  /** After a failure, how long before a new thread is tried (1 min). */
  retryAfterMs?: number
  /** How long a checkpoint may take before its thread is given up (1 min). */
  deadlineMs?: number
  /** How long a thread asked to end may take before it is left behind (5 s). */
  endWithinMs?: number
  /** Starts the thread (tests give one that fails). */
  spawn?: (path: string) => Worker
  /** A thread given up (to log it); at most one a retryAfterMs. */
  onFailure?: (failure: CheckpointFailure) => void
  /** A checkpoint failed on the disk (see isDiskFailure): the store stops writing. */
  onDiskFailure?: (code: string) => void
}

export class BackgroundCheckpoints {
  /** Checkpoints answered, and threads given up. */
  readonly stats = { checkpoints: 0, failures: 0 }
  private worker: Worker | undefined
  private inFlight = false
  private closed = false
  /** No checkpoint is asked for before this time (performance.now()). */
  private nextAt: number
  /** Gives the thread up when a checkpoint takes longer than deadlineMs. */
  private deadline: NodeJS.Timeout | undefined
  private readonly intervalMs: number
  private readonly retryAfterMs: number
  private readonly deadlineMs: number
  private readonly endWithinMs: number
  private readonly spawn: (path: string) => Worker
  private readonly onFailure: (failure: CheckpointFailure) => void
  private readonly onDiskFailure: (code: string) => void
  /** Threads asked to end: each settles once it ended, or once it was left behind. */
  private readonly ending = new Set<Promise<void>>()

  /** `path`: the database file (its real path: the thread opens it by name). */
  constructor(
    private readonly path: string,
    options: BackgroundCheckpointsOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 100
    this.retryAfterMs = options.retryAfterMs ?? 60_000
    this.deadlineMs = options.deadlineMs ?? 60_000
    this.endWithinMs = options.endWithinMs ?? 5_000
    this.spawn =
      options.spawn ??
      ((file) =>
        new Worker(PROGRAM, {
          eval: true,
          workerData: { module: BETTER_SQLITE3, path: file, cacheKib: PAGE_CACHE_KIB },
          stdout: false,
          stderr: false,
        }))
    this.onFailure = options.onFailure ?? (() => {})
    this.onDiskFailure = options.onDiskFailure ?? (() => {})
    // The first one waits an interval too: a store written once and closed starts no thread.
    this.nextAt = performance.now() + this.intervalMs
  }

  /** Whether a thread is running now (tests). */
  get running(): boolean {
    return this.worker !== undefined
  }

  /** The store committed: asks for a checkpoint when none runs and the last is old enough. */
  written(): void {
    if (this.inFlight || this.closed) return
    const now = performance.now()
    if (now < this.nextAt) return
    const worker = this.worker ?? this.start()
    if (!worker) return
    this.inFlight = true
    worker.postMessage('checkpoint')
    this.deadline = setTimeout(() => this.fail(worker, 'deadline'), this.deadlineMs)
    this.deadline.unref()
  }

  /**
   * Ends the thread (its connection closed first, so that the store's is the last, which
   * checkpoints everything and removes the WAL); no thread starts afterwards. A thread that has
   * not ended within endWithinMs (stuck in a disk that does not answer) is terminated and left
   * behind: the close does not wait for it.
   */
  async close(): Promise<void> {
    this.closed = true
    this.retire()
    await Promise.all(this.ending)
  }

  /**
   * Stops at once: the thread is terminated instead of asked to end (a checkpoint it is running
   * still runs to its end: no thread can be interrupted inside SQLite). No thread starts afterwards.
   */
  stop(): void {
    this.closed = true
    const worker = this.worker
    this.retire()
    if (worker) void worker.terminate()
  }

  private start(): Worker | undefined {
    let worker: Worker
    try {
      worker = this.spawn(this.path)
    } catch (err) {
      this.fail(undefined, 'spawn', errorCode(err))
      return undefined
    }
    // The process does not stay up for a checkpoint.
    worker.unref()
    this.worker = worker
    worker.on('message', (answer: Answer) => {
      if (this.worker !== worker || !this.inFlight) return
      this.inFlight = false
      clearTimeout(this.deadline)
      const error = answer?.error
      if (error !== undefined) {
        const code = String(error)
        this.fail(worker, 'checkpoint', code)
        if (isDiskFailure(code)) this.onDiskFailure(code)
        return
      }
      this.stats.checkpoints++
      this.nextAt = performance.now() + this.intervalMs
    })
    worker.on('error', (err: unknown) => this.fail(worker, 'error', errorCode(err)))
    worker.on('exit', (code: number) => this.fail(worker, 'exit', code))
    return worker
  }

  /**
   * Asks the current thread, if any, to end, and keeps track of it until it has (`exited`: it
   * already has).
   */
  private retire(exited = false): void {
    const worker = this.worker
    this.worker = undefined
    this.inFlight = false
    clearTimeout(this.deadline)
    if (!worker) return
    worker.removeAllListeners('message')
    if (exited) return
    let timer: NodeJS.Timeout | undefined
    // The process stays up until the thread has ended (or is left behind): a close awaited in a
    // process with nothing else to do (a command-line tool, the bench) would otherwise see the
    // event loop empty out under it and the process exit before the store's own connection closed.
    worker.ref()
    const ended = new Promise<void>((resolve) => {
      worker.once('exit', () => resolve())
      timer = setTimeout(() => {
        void worker.terminate()
        worker.unref() // stuck in the disk: left behind, as the process may end without it
        resolve()
      }, this.endWithinMs)
      timer.unref()
      worker.postMessage('close')
    }).finally(() => {
      clearTimeout(timer)
      this.ending.delete(ended)
    })
    this.ending.add(ended)
  }

  /** Gives the thread up (once) and waits retryAfterMs before the next. */
  private fail(
    worker: Worker | undefined,
    reason: CheckpointFailureReason,
    code?: string | number,
  ): void {
    if (worker !== undefined && this.worker !== worker) return
    this.retire(reason === 'exit')
    this.nextAt = performance.now() + this.retryAfterMs
    this.stats.failures++
    if (this.closed) return
    try {
      this.onFailure({
        reason,
        ...(code === undefined ? {} : { code }),
        retryInMs: this.retryAfterMs,
      })
    } catch {
      // A listener's failure is not the store's.
    }
  }
}

/** A code that says why the thread failed; never its message. */
function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}
