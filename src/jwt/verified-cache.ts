import { hash } from 'node:crypto'
import { millisOf } from '../clock.js'

/** What a verified token established: which signer vouched for which identity, until when. */
export interface VerifiedEntry {
  signerId: string
  identityId: string
  kid: string
  /** The token's `exp`, in seconds (a session that ends with its token ends then). */
  exp: number
  /**
   * Milliseconds since the epoch after which the token no longer counts: exp plus tolerance, or
   * sooner when the signer's `maxTokenAge` would refuse it then (time-dependent rules).
   */
  expiresAtMs: number
}

export const DEFAULT_CACHE_ENTRIES = 10_000

/** Drops remembered by what they were about; a check that saw more of them is not remembered. */
const RECENT_DROPS = 64

/** One drop: of a signer (or of some of its keys), of an identity, or of everything. */
interface Drop {
  signerId?: string
  identityId?: string
  all?: true
}

/**
 * A bounded cache of verified tokens, keyed by the SHA-256 of the token (never the token itself).
 * Entries end at the token's expiry; the least recently used entry goes when the cache is full, so
 * a flood of distinct tokens cannot grow it. Only tokens that passed every check are stored.
 *
 * Speed path: a session that presents its JWT on every call (the secondary factor) pays one hash
 * and a map lookup instead of a signature check per request: about 0.6 µs for an ES256 token, 0.4
 * of it the hash, on a CPU with the SHA extensions (2 to 3.5 µs for the hash on one without).
 * `npm run bench`, goal 4, compares the route with and without the factor.
 */
export class VerifiedTokenCache {
  private readonly entries = new Map<string, VerifiedEntry>()
  /**
   * Walks the entries oldest first, across evictions: every entry it has passed is gone, and a
   * used or new entry goes to the end, so its next key is the least recently used. A fresh
   * iterator per eviction would step again over every slot deleted since the map last compacted
   * (thousands under a flood of distinct tokens).
   */
  private oldest = this.entries.keys()
  /** The key set or used last (the map's last entry, unless it was deleted since). */
  private newest: string | undefined

  /** Now, in milliseconds since the epoch (no Date made per lookup on the wall clock). */
  private readonly now: () => number

  /**
   * Moves on with every drop: a verification that began before a signer, its keys or an identity
   * changed may have read what was true before, and `set` refuses to remember it.
   */
  private dropped = 0
  /** What the last RECENT_DROPS drops were about, oldest first (`all`: the whole cache). */
  private readonly recent: Drop[] = []

  constructor(
    clock: () => Date,
    private readonly maxEntries = DEFAULT_CACHE_ENTRIES,
    /** Whether the signer still holds the kid: a verification that ends after a refresh retired
     * its key is not remembered (it would outlive the drop of that kid). */
    private readonly isLive: (signerId: string, kid: string) => boolean = () => true,
  ) {
    this.now = millisOf(clock)
  }

  static key(token: string): string {
    return hash('sha256', token, 'base64url')
  }

  get size(): number {
    return this.entries.size
  }

  /**
   * Taken before a verification starts; `set` with it remembers the result only if nothing it may
   * have relied on (its signer, its identity) was dropped meanwhile.
   */
  get generation(): number {
    return this.dropped
  }

  private noteDrop(drop: Drop): void {
    this.dropped++
    this.recent.push(drop)
    if (this.recent.length > RECENT_DROPS) this.recent.shift()
  }

  /** Whether a drop since generation `since` concerns this entry (or is too old to tell). */
  private droppedSince(since: number, entry: VerifiedEntry): boolean {
    const count = this.dropped - since
    if (count === 0) return false
    if (count > this.recent.length) return true
    for (let i = this.recent.length - count; i < this.recent.length; i++) {
      const drop = this.recent[i] as Drop // within the ring, as counted above
      if (drop.all || drop.signerId === entry.signerId || drop.identityId === entry.identityId)
        return true
    }
    return false
  }

  get(key: string): VerifiedEntry | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    if (entry.expiresAtMs <= this.now()) {
      this.entries.delete(key)
      return undefined
    }
    // The most recently used goes last; a token presented on every request of a session usually
    // is last already, and moving it would only leave a deleted slot behind each time.
    if (key !== this.newest) {
      this.entries.delete(key)
      this.entries.set(key, entry)
      this.newest = key
    }
    return entry
  }

  /**
   * Remembers a verification. With `since` (the generation taken before it started), only if none
   * of its signer, that signer's keys, its identity, or the whole cache was dropped since: a change
   * during the check (on this instance, or on another as its notification arrived) may have been
   * missed by it. Drops of other signers and identities (a burst of enrollments, say) do not count.
   */
  set(key: string, entry: VerifiedEntry, since?: number): void {
    this.entries.delete(key)
    if (since !== undefined && this.droppedSince(since, entry)) return
    if (!this.isLive(entry.signerId, entry.kid)) return
    while (this.entries.size >= this.maxEntries) this.evictOldest()
    this.entries.set(key, entry)
    this.newest = key
  }

  private evictOldest(): void {
    let next = this.oldest.next()
    if (next.done) {
      this.oldest = this.entries.keys()
      next = this.oldest.next()
    }
    if (!next.done) this.entries.delete(next.value)
  }

  /** Forgets every token of a signer (it changed or went away). */
  dropSigner(signerId: string): void {
    this.noteDrop({ signerId })
    for (const [key, entry] of this.entries)
      if (entry.signerId === signerId) this.entries.delete(key)
  }

  /** Forgets every token verified with one of these kids of a signer (its provider retired them). */
  dropKids(signerId: string, kids: string[]): void {
    this.noteDrop({ signerId })
    const retired = new Set(kids)
    for (const [key, entry] of this.entries)
      if (entry.signerId === signerId && retired.has(entry.kid)) this.entries.delete(key)
  }

  /** Forgets every token that named an identity (it changed or went away). */
  dropIdentity(identityId: string): void {
    this.noteDrop({ identityId })
    for (const [key, entry] of this.entries)
      if (entry.identityId === identityId) this.entries.delete(key)
  }

  clear(): void {
    this.noteDrop({ all: true })
    this.entries.clear()
  }
}
