import type { Store, UnitOfWork } from './contract.js'

interface Pending<T> {
  item: T
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Group commit: items written within a millisecond of each other share one unit of work (one multi-row
 * statement where the store can), and each caller's promise settles only once its item is
 * committed (or failed). Under concurrent load this turns N commits into one without giving up
 * durability of anything already answered.
 */
const WINDOW_MS = 1
const MAX_BATCH = 64

export class BatchWriter<T> {
  private queue: Pending<T>[] = []
  private timer: NodeJS.Timeout | undefined
  private readonly flushing = new Set<Promise<void>>()

  constructor(
    private readonly store: Store,
    private readonly write: (tx: UnitOfWork, items: T[]) => Promise<void>,
  ) {}

  /** Resolves when the item is committed; rejects with the error its own write raised. */
  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      const n = this.queue.push({ item, resolve, reject })
      // Logins finish their signature checks in separate turns of the event loop: waiting a
      // millisecond for the next ones turns several commits into one (MAX_BATCH flushes at once).
      if (n === 1) this.timer = setTimeout(() => this.startFlush(), WINDOW_MS)
      else if (n >= MAX_BATCH) {
        clearTimeout(this.timer)
        this.startFlush()
      }
    })
  }

  /** Commits whatever is queued now and resolves when every write begun has settled (shutdown). */
  async drain(): Promise<void> {
    clearTimeout(this.timer)
    this.startFlush()
    await Promise.allSettled([...this.flushing])
  }

  private startFlush(): void {
    const p = this.flush()
    this.flushing.add(p)
    void p.finally(() => this.flushing.delete(p))
  }

  private async flush(): Promise<void> {
    const batch = this.queue
    this.queue = []
    if (batch.length === 0) return
    try {
      await this.store.transaction((tx) =>
        this.write(
          tx,
          batch.map((p) => p.item),
        ),
      )
      for (const p of batch) p.resolve()
    } catch {
      // One bad item must not fail the others: retry each in a unit of work of its own.
      for (const p of batch) {
        try {
          await this.store.transaction((tx) => this.write(tx, [p.item]))
          p.resolve()
        } catch (err) {
          p.reject(err)
        }
      }
    }
  }
}
