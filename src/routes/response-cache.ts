import { createHash } from 'node:crypto'

/** A serialised response and its strong entity tag. */
export interface CachedBody {
  body: string
  etag: string
}

/**
 * Serialised list responses by query, valid for one version of the data. `clear()` drops them all
 * (a change was committed); a response built while a change landed is not kept, so nothing older
 * than the newest change is ever served. Bounded: it empties itself when full.
 */
export class ResponseCache {
  private readonly entries = new Map<string, { version: string; value: CachedBody }>()
  private generation = 0

  constructor(private readonly maxEntries = 256) {}

  async get(key: string, version: string, build: () => Promise<string>): Promise<CachedBody> {
    const hit = this.entries.get(key)
    if (hit && hit.version === version) return hit.value
    const generation = this.generation
    const value = tagged(await build())
    if (generation === this.generation) {
      if (this.entries.size >= this.maxEntries) this.entries.clear()
      this.entries.set(key, { version, value })
    }
    return value
  }

  clear(): void {
    this.generation++
    this.entries.clear()
  }
}

/** A body with its strong entity tag (for answers that are not kept as well). */
export function tagged(body: string): CachedBody {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` }
}

/** Whether an If-None-Match header names this entity tag (or is `*`). */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}
