import type { LoginFailureRecord } from '../contract.js'

// Names tracked at most; beyond, the least recently failed is forgotten (bounded memory under a
// spray of names, each of which gets no more than the configured attempts before its backoff).
const MAX_NAMES = 100_000

interface Entry extends LoginFailureRecord {
  updatedAt: string
}

/**
 * The brute-force counter on SQLite, in memory: one process owns the file, so no other instance
 * needs to see it; a restart forgets the counts (an attacker cannot restart the controller).
 */
export class LoginFailureRepository {
  private readonly entries = new Map<string, Entry>()

  get(name: string): LoginFailureRecord | undefined {
    const entry = this.entries.get(name)
    return entry ? { failures: entry.failures, lockedUntil: entry.lockedUntil } : undefined
  }

  addFailure(name: string, at: string): number {
    const entry = this.entries.get(name)
    this.entries.delete(name) // re-inserted: the map stays in order of last failure
    if (!entry && this.entries.size >= MAX_NAMES) {
      this.entries.delete(this.entries.keys().next().value as string) // the map is not empty
    }
    const failures = (entry?.failures ?? 0) + 1
    this.entries.set(name, { failures, lockedUntil: entry?.lockedUntil ?? null, updatedAt: at })
    return failures
  }

  lockUntil(name: string, until: string): void {
    const entry = this.entries.get(name)
    if (entry) entry.lockedUntil = until
  }

  clear(name: string): void {
    this.entries.delete(name)
  }

  deleteBefore(before: string): number {
    let n = 0
    for (const [name, entry] of this.entries) {
      if (entry.updatedAt < before && (entry.lockedUntil ?? '') < before) {
        this.entries.delete(name)
        n++
      }
    }
    return n
  }
}
