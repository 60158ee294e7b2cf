import type { Store, UnitOfWork } from './types.js'

interface Pending<T> {
  item: T
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Group commit: items written in the same event-loop turn share one unit of work (one multi-row
 * statement where the store can), and each caller's promise settles only once its item is
 * committed (or failed). Under concurrent load this turns N commits into one without giving up
 * durability of anything already answered.
 */
export class BatchWriter<T> {
  private queue: Pending<T>[] = []

  constructor(
    private readonly store: Store,
    private readonly write: (tx: UnitOfWork, items: T[]) => Promise<void>,
  ) {}

  /** Resolves when the item is committed; rejects with the error its own write raised. */
  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.queue.push({ item, resolve, reject }) === 1) setImmediate(() => void this.flush())
    })
  }

  private async flush(): Promise<void> {
    const batch = this.queue
    this.queue = []
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
