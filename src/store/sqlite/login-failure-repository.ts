import type { LoginFailureRecord } from '../contract.js'

// Names no identity has, tracked at most; beyond, the least recently failed is forgotten (bounded
// memory under a spray of made-up names). An identity's name is never forgotten that way: a spray
// of made-up names must not clear a real account's count and backoff.
const MAX_UNKNOWN_NAMES = 100_000

interface Entry extends LoginFailureRecord {
  updatedAt: string
}

/**
 * The brute-force counter on SQLite, in memory: one process owns the file, so no other instance
 * needs to see it; a restart forgets the counts (an attacker cannot restart the controller).
 * Identities' names and other names are kept apart: the first are as many as the identities
 * (forgotten a day after their last failure), the second are bounded.
 */
export class LoginFailureRepository {
  private readonly known = new Map<string, Entry>()
  private readonly unknown = new Map<string, Entry>()

  get(name: string): LoginFailureRecord | undefined {
    const entry = this.known.get(name) ?? this.unknown.get(name)
    return entry ? { failures: entry.failures, lockedUntil: entry.lockedUntil } : undefined
  }

  addFailure(name: string, at: string, known = false): number {
    const entry = this.known.get(name) ?? this.unknown.get(name)
    this.known.delete(name)
    this.unknown.delete(name) // re-inserted: the map stays in order of last failure
    const into = known ? this.known : this.unknown
    if (!known && this.unknown.size >= MAX_UNKNOWN_NAMES) {
      this.unknown.delete(this.unknown.keys().next().value as string) // the map is not empty
    }
    const failures = (entry?.failures ?? 0) + 1
    into.set(name, { failures, lockedUntil: entry?.lockedUntil ?? null, updatedAt: at })
    return failures
  }

  lockUntil(name: string, until: string): void {
    const entry = this.known.get(name) ?? this.unknown.get(name)
    // Never shortened: a later failure counted first may have set a longer lock already.
    if (entry && !(entry.lockedUntil && entry.lockedUntil >= until)) entry.lockedUntil = until
  }

  clear(name: string): void {
    this.known.delete(name)
    this.unknown.delete(name)
  }

  deleteBefore(before: string): number {
    let n = 0
    for (const entries of [this.known, this.unknown]) {
      for (const [name, entry] of entries) {
        if (entry.updatedAt < before && (entry.lockedUntil ?? '') < before) {
          entries.delete(name)
          n++
        }
      }
    }
    return n
  }
}
