import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

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
 * six turns): 1.07 times the logins a second of checkpoints in the commit (every round 1.03 to
 * 1.08).
 *
 * A checkpoint is never needed for durability (a commit is durable once its WAL is synced) nor for
 * correctness: a thread that fails (it cannot start, errs, exits or answers with an error) is
 * given up, told to `onFailure`, and tried again no sooner than `retryAfterMs` later; meanwhile
 * checkpoints run in the commits, as before.
 */

/** The thread's whole program (CommonJS, evaluated as given). */
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.path, { fileMustExist: true, timeout: 1000 })
db.pragma('synchronous = FULL')
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
export type CheckpointFailureReason = 'spawn' | 'error' | 'exit' | 'checkpoint'

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

export interface BackgroundCheckpointsOptions {
  /** The least time between two checkpoints (100 ms). */
  intervalMs?: number
  /** After a failure, how long before a new thread is tried (1 min). */
  retryAfterMs?: number
  /** Starts the thread (tests give one that fails). */
  spawn?: (path: string) => Worker
  onFailure?: (failure: CheckpointFailure) => void
}

export class BackgroundCheckpoints {
  /** Checkpoints answered, and threads given up. */
  readonly stats = { checkpoints: 0, failures: 0 }
  private worker: Worker | undefined
  private inFlight = false
  private closed = false
  /** No checkpoint is asked for before this time (performance.now()). */
  private nextAt: number
  private readonly intervalMs: number
  private readonly retryAfterMs: number
  private readonly spawn: (path: string) => Worker
  private readonly onFailure: (failure: CheckpointFailure) => void
  /** Resolves when the thread that was asked to close has ended. */
  private ended: Promise<void> = Promise.resolve()

  /** `path`: the database file (its real path: the thread opens it by name). */
  constructor(
    private readonly path: string,
    options: BackgroundCheckpointsOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 100
    this.retryAfterMs = options.retryAfterMs ?? 60_000
    this.spawn =
      options.spawn ??
      ((file) =>
        new Worker(PROGRAM, {
          eval: true,
          workerData: { module: BETTER_SQLITE3, path: file },
          stdout: false,
          stderr: false,
        }))
    this.onFailure = options.onFailure ?? (() => {})
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
  }

  /** Ends the thread (its connection closed first); checkpoints run in the commits afterwards. */
  async close(): Promise<void> {
    this.closed = true
    const worker = this.worker
    if (worker) {
      this.worker = undefined
      worker.removeAllListeners('message')
      worker.postMessage('close')
      // A thread stuck in a checkpoint (a disk that does not answer) does not hold the close up.
      const timer = setTimeout(() => void worker.terminate(), 5_000)
      this.ended = new Promise<void>((resolve) => worker.once('exit', () => resolve())).finally(
        () => clearTimeout(timer),
      )
    }
    await this.ended
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
      if (this.worker !== worker) return
      this.inFlight = false
      if (answer?.error !== undefined) {
        this.fail(worker, 'checkpoint', answer.error)
        return
      }
      this.stats.checkpoints++
      this.nextAt = performance.now() + this.intervalMs
    })
    worker.on('error', (err: unknown) => this.fail(worker, 'error', errorCode(err)))
    worker.on('exit', (code: number) => this.fail(worker, 'exit', code))
    return worker
  }

  /** Gives the thread up (once) and waits retryAfterMs before the next. */
  private fail(
    worker: Worker | undefined,
    reason: CheckpointFailureReason,
    code?: string | number,
  ): void {
    if (worker !== undefined && this.worker !== worker) return
    this.worker = undefined
    this.inFlight = false
    this.nextAt = performance.now() + this.retryAfterMs
    this.stats.failures++
    if (worker) {
      worker.removeAllListeners('message')
      worker.postMessage('close')
    }
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
