/**
 * Serialises units of work on the one SQLite connection. A better-sqlite3 transaction would commit
 * at its first `await`, so an async unit of work holds this lock from BEGIN to COMMIT, and every
 * other statement waits for it (no other request's write can slip into the open transaction, and
 * no read sees its uncommitted rows). When the lock is free a statement runs at once, synchronously.
 */
export class Mutex {
  private locked = false
  private readonly waiters: (() => void)[] = []

  async lock(): Promise<void> {
    if (!this.locked) {
      this.locked = true
      return
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve))
  }

  unlock(): void {
    const next = this.waiters.shift()
    if (next) next()
    else this.locked = false
  }

  /** Runs a synchronous statement now when free, else after the unit of work holding the lock. */
  run<R>(fn: () => R): Promise<R> {
    if (!this.locked) return now(fn)
    return this.lock().then(() => {
      try {
        return fn()
      } finally {
        this.unlock()
      }
    })
  }
}

/** A synchronous call as a settled promise (a throw becomes a rejection). */
export function now<R>(fn: () => R): Promise<R> {
  try {
    return Promise.resolve(fn())
  } catch (err) {
    return Promise.reject(err)
  }
}
