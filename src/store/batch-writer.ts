import { AppError } from '../errors.js'

interface Pending<T> {
  item: T
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Group commit: items added in the same turn of the event loop share one write (one transaction,
 * one statement where the store can), and each caller's promise settles only once its item is
 * committed (or failed). Under concurrent load this turns N commits into one without giving up
 * durability of anything already answered.
 *
 * The write starts at the end of the turn (`setImmediate`, after the turn's I/O callbacks), not
 * after a timer: logins whose signature checks come back together (the signature threads answer a
 * turn's checks as one message) or whose reads completed in the same poll are queued by then, and
 * none waits a millisecond for others that may never come. Measured side by side (RS256 logins of
 * distinct tokens, 32 connections, two controllers in turns, six rounds), the end of the turn
 * served 1.17 times the logins a second of a millisecond's window on SQLite (rounds 0.99 to 1.26),
 * 1.05 times on PostgreSQL (0.89 to 1.14): the event loop had idled while logins sat in the window.
 *
 * One unit of work runs at a time: what arrives meanwhile waits and goes in the next, so batches
 * grow with the store's commit time instead of piling up as many small transactions that hold
 * connections and wait on each other (on PostgreSQL, the session cap's per-identity trim serialises
 * those of one identity anyway). Two or four at a time, to overlap one commit's round trip with
 * the next batch, served fewer logins on PostgreSQL with the database on the controller's two
 * cores: RS256 logins of distinct tokens, 32 connections, against SQLite's in the same turns, runs
 * of three rounds, 0.70 to 0.73 of SQLite's rate with two or four, 0.76 to 0.77 with one (batches
 * of about 14 logins, each commit 1.6 ms). Every batch costs the server a fixed part (the call,
 * the commit, its flush), and two small batches at once compete for the same cores. Writing the
 * next batch on a connection of its own while one commits (pipelined, so the server runs them back
 * to back) did no better than one at a time either (README, "Capacity").
 *
 * On SQLite two run at once (`concurrency`): a login batch commits on the event loop in a fraction
 * of a millisecond and then waits for its WAL's sync on the thread pool, which the next batch's
 * commit does not compete with. RS256 logins of distinct tokens, two controllers in turns (five
 * rounds of four turns, twice): 1.03 and 1.02 times the logins a second of one at a time (every
 * round 1.02 to 1.06); four at a time, 1.01 (rounds 0.98 to 1.06).
 */
const MAX_BATCH = 256

/** Settles a written item: rejected with its error if its write refused it, else resolved. */
function settle<T>(p: Pending<T>, refused: ReadonlyMap<T, unknown> | undefined): void {
  if (refused?.has(p.item)) p.reject(refused.get(p.item))
  else p.resolve()
}

/**
 * What a writer has done so far (the metrics follow it): units of work run, items committed, and
 * the seconds at least one unit of work was in flight: their rate is the share of time the writer
 * is busy (near 1, what waits to be written waits on the store's commits).
 */
export interface BatchWriterStats {
  writes: number
  committed: number
  seconds: number
}

export interface BatchWriterOptions {
  /**
   * Units of work at once (default 1). More than one only where a unit's last step waits on
   * something the next can overlap without competing for the same resource: SQLite's login batch
   * waits for its WAL's sync on the thread pool after committing, and the next batch can commit
   * meanwhile (see SqliteStore.loginBatchesAtOnce).
   */
  concurrency?: number
}

export class BatchWriter<T> {
  readonly stats: BatchWriterStats = { writes: 0, committed: 0, seconds: 0 }
  private queue: Pending<T>[] = []
  /** The write at the end of this turn, when one is scheduled. */
  private scheduled: NodeJS.Immediate | undefined
  /** The units of work running now. */
  private readonly writing = new Set<Promise<void>>()
  private readonly concurrency: number
  /** When a unit of work last started or ended. */
  private busySince = 0

  /**
   * `write` stores its items atomically: all of them or none. It may refuse some (stores the
   * rest): those it names, each with the error its caller's promise rejects with.
   */
  constructor(
    private readonly write: (
      items: T[],
    ) => Promise<ReadonlyMap<T, unknown> | undefined> | Promise<void>,
    options: BatchWriterOptions = {},
  ) {
    this.concurrency = Math.max(1, options.concurrency ?? 1)
  }

  /** Resolves when the item is committed; rejects with the error its own write raised. */
  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      const n = this.queue.push({ item, resolve, reject })
      // While as many units of work run as may, the end of one starts the next.
      if (this.writing.size >= this.concurrency) return
      // The rest of this turn's items join it (MAX_BATCH flushes at once).
      if (this.scheduled === undefined) this.scheduled = setImmediate(() => this.startFlush())
      else if (n >= MAX_BATCH) this.startFlush()
    })
  }

  /** Commits whatever is queued now and resolves when every write begun has settled (shutdown). */
  async drain(): Promise<void> {
    for (;;) {
      if (this.queue.length > 0 && this.writing.size < this.concurrency) this.startFlush()
      else if (this.writing.size > 0) await Promise.all(this.writing)
      else return
    }
  }

  private startFlush(): void {
    clearImmediate(this.scheduled)
    this.scheduled = undefined
    if (this.writing.size >= this.concurrency || this.queue.length === 0) return
    const batch = this.queue.splice(0, MAX_BATCH)
    this.countBusyTime()
    const writing: Promise<void> = this.flushItems(batch).finally(() => {
      this.countBusyTime()
      this.writing.delete(writing)
      // What arrived meanwhile has waited a whole commit already: it goes now.
      if (this.queue.length > 0) this.startFlush()
    })
    this.writing.add(writing)
  }

  /** Adds the time since the last start or end of a unit of work, if one was running. */
  private countBusyTime(): void {
    const now = performance.now()
    if (this.writing.size > 0) this.stats.seconds += (now - this.busySince) / 1000
    this.busySince = now
  }

  /** One write of its own per unit of work, counted. */
  private async writeItems(items: T[]): Promise<ReadonlyMap<T, unknown> | undefined> {
    this.stats.writes++
    const refused = (await this.write(items)) ?? undefined
    this.stats.committed += items.length - (refused?.size ?? 0)
    return refused
  }

  private async flushItems(batch: Pending<T>[]): Promise<void> {
    try {
      const refused = await this.writeItems(batch.map((p) => p.item))
      for (const p of batch) settle(p, refused)
    } catch (err) {
      // The store did not answer: each item alone would wait as long again, one after another.
      if (err instanceof AppError && err.code === 'SERVICE_UNAVAILABLE') {
        for (const p of batch) p.reject(err)
        return
      }
      // One bad item must not fail the others: retry each in a write of its own.
      for (const p of batch) {
        try {
          settle(p, await this.writeItems([p.item]))
        } catch (err) {
          p.reject(err)
        }
      }
    }
  }
}
