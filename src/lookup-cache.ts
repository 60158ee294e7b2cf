/**
 * Lookups by key kept in memory until the next change: `clear()` is called synchronously when a
 * change commits (here, or heard from another instance), so a lookup started before it is never
 * served after it. Failed lookups are not kept. Bounded: it empties itself when full.
 */
export class LookupCache<V> {
  private readonly entries = new Map<string, Promise<V>>()

  constructor(private readonly maxEntries = 10_000) {}

  get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key)
    if (hit) return hit
    if (this.entries.size >= this.maxEntries) this.entries.clear()
    const loading = load()
    this.entries.set(key, loading)
    loading.catch(() => {
      if (this.entries.get(key) === loading) this.entries.delete(key)
    })
    return loading
  }

  clear(): void {
    this.entries.clear()
  }
}
