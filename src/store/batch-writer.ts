import type { Db } from './db.js'

interface Pending<T> {
  item: T
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Group commit: items written in the same event-loop turn share one transaction, and each caller's
 * promise settles only once its item is committed (or failed). Under concurrent load this turns N
 * commits into one without giving up durability of anything already answered.
 */
export class BatchWriter<T> {
  private queue: Pending<T>[] = []

  constructor(
    private readonly db: Db,
    private readonly write: (item: T) => void,
  ) {}

  /** Resolves when the item is committed; rejects with the error its own write raised. */
  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.queue.push({ item, resolve, reject }) === 1) setImmediate(() => this.flush())
    })
  }

  private flush(): void {
    const batch = this.queue
    this.queue = []
    try {
      this.db.transaction(() => {
        for (const p of batch) this.write(p.item)
      })()
      for (const p of batch) p.resolve()
    } catch {
      // One bad item must not fail the others: retry each in a transaction of its own.
      for (const p of batch) {
        try {
          this.db.transaction(() => this.write(p.item))()
          p.resolve()
        } catch (err) {
          p.reject(err)
        }
      }
    }
  }
}
