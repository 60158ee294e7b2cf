/**
 * Lookups by key kept in memory until the next change: `clear()` is called synchronously when a
 * change commits (here, or heard from another instance), so a lookup started before it is never
 * served after it. Failed lookups are not kept. Bounded: it empties itself when full.
 */
export class LookupCache<V> {
  private readonly entries = new Map<string, Promise<V>>()
  /** The value of each kept lookup that has completed (a subset of `entries`' keys). */
  private readonly settled = new Map<string, V>()

  constructor(private readonly maxEntries = 10_000) {}

  get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key)
    if (hit) return hit
    if (this.entries.size >= this.maxEntries) this.clear()
    const loading = load()
    this.entries.set(key, loading)
    loading.then(
      (value) => {
        if (this.entries.get(key) === loading) this.settled.set(key, value)
      },
      () => {
        if (this.entries.get(key) === loading) this.entries.delete(key)
      },
    )
    return loading
  }

  /**
   * The value of a kept lookup that has completed, without waiting: `{ value }`, or undefined when
   * nothing is kept for the key or its lookup is still running.
   */
  peek(key: string): { value: V } | undefined {
    const value = this.settled.get(key)
    return value !== undefined || this.settled.has(key) ? { value: value as V } : undefined
  }

  clear(): void {
    this.entries.clear()
    this.settled.clear()
  }
}
