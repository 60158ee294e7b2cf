import { hash } from 'node:crypto'
import type { ListQuery } from './common-schemas.js'

/** A serialised response (its bytes, encoded once) and its strong entity tag. */
export interface CachedBody {
  body: Buffer
  etag: string
}

/**
 * The key of one list page: the list parameters exactly as the query gave them, an absent one
 * (null) told apart from any text (quoted), so `?limit=undefined` is never the default page.
 */
export function pageKey(q: ListQuery): string {
  return JSON.stringify([q.filter ?? null, q.sort ?? null, q.limit ?? null, q.offset ?? null])
}

/**
 * Serialised list responses by query, valid for one version of the data. `clear()` drops them all
 * (a change was committed); a response built while a change landed is not kept, so nothing older
 * than the newest change is ever served. Bounded: it empties itself when full.
 *
 * Speed path: list pages are read and serialised once per data version instead of once per request;
 * it buys the management signer and identity lists their 0.53 and 0.54 of a bare route
 * (`npm run bench`, goal 3; 0.4 wanted) and the client list's route its kept pages.
 */
export class ResponseCache {
  private readonly entries = new Map<string, { version: string; value: CachedBody }>()
  private generation = 0

  constructor(private readonly maxEntries = 256) {}

  async get(key: string, version: string, build: () => Promise<string>): Promise<CachedBody> {
    const hit = this.peek(key, version)
    if (hit) return hit
    const generation = this.generation
    const value = tagged(await build())
    if (generation === this.generation) {
      if (this.entries.size >= this.maxEntries) this.entries.clear()
      this.entries.set(key, { version, value })
    }
    return value
  }

  /** The kept response of `key` for `version`, if there is one (nothing is built). */
  peek(key: string, version: string): CachedBody | undefined {
    const hit = this.entries.get(key)
    return hit && hit.version === version ? hit.value : undefined
  }

  clear(): void {
    this.generation++
    this.entries.clear()
  }
}

/** A body with its strong entity tag (for answers that are not kept as well). */
export function tagged(body: string): CachedBody {
  return {
    body: Buffer.from(body),
    etag: `"${hash('sha256', body, 'base64url')}"`,
  }
}

/** Whether an If-None-Match header names this entity tag (or is `*`). */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}
