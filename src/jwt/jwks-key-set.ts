import {
  type CompactJWSHeaderParameters,
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
} from 'jose'
import type { JwksFetcher } from './jwks-fetch.js'
import { jwkRefusal } from './key-strength.js'

/** A key of the fetched set that is not used, and why. */
export interface RefusedKey {
  kid: string | null
  reason: string
}

export type FetchResult =
  | { ok: true; keys: number; retiredKids: string[]; refused: RefusedKey[] }
  | { ok: false; error: unknown }

export interface KeySetOptions {
  fetcher: JwksFetcher
  clock: () => Date
  cooldownMs: number
  maxAgeMs: number
  onFetch?: (result: FetchResult) => void
}

/** What an operator sees of a key set (timestamps from the injected clock). */
export interface KeySetStatus {
  kids: string[]
  lastFetchAt: string | null
  lastFetchError: string | null
  nextRefreshAt: string | null
  /** Keys of the last fetched set that are not used (a weak RSA exponent); absent when none. */
  refusedKeys?: RefusedKey[]
}

type Key = Awaited<ReturnType<JWTVerifyGetKey>>

// Keeps a tiny max age from turning the refresh timer into a busy loop; setTimeout's own ceiling.
const MIN_TIMER_MS = 100
const MAX_TIMER_MS = 2 ** 31 - 1

/** The message of a fetch failure, with the network cause undici hides in `cause`. */
export function fetchErrorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${error.message}${cause}`
}

/** Each kid of a set with its key's JSON, so a kid whose key changed counts as retired too. */
function kidsOf(jwks: JSONWebKeySet): Map<string, string> {
  const kids = new Map<string, string>()
  for (const jwk of jwks.keys)
    if (typeof jwk.kid === 'string') kids.set(jwk.kid, JSON.stringify(jwk))
  return kids
}

/**
 * The most keys a JWKS may hold. Providers publish a few (the current key, the next, the last);
 * a megabyte of keys would be kept, screened on every fetch and scanned by every lookup of a kid.
 */
export const MAX_JWKS_KEYS = 100

/**
 * Splits a fetched set into the keys that may verify signatures and those refused, with why.
 * Throws (a failed fetch: the keys fetched before stay) when the set holds more than MAX_JWKS_KEYS.
 */
function screen(jwks: JSONWebKeySet): { usable: JSONWebKeySet; refused: RefusedKey[] } {
  if (jwks.keys.length > MAX_JWKS_KEYS) {
    throw new Error(`the JWKS holds ${jwks.keys.length} keys; at most ${MAX_JWKS_KEYS} are read`)
  }
  const refused: RefusedKey[] = []
  const keys = jwks.keys.filter((jwk) => {
    const reason = jwkRefusal(jwk)
    if (reason) refused.push({ kid: typeof jwk.kid === 'string' ? jwk.kid : null, reason })
    return reason === undefined
  })
  return { usable: { ...jwks, keys }, refused }
}

/**
 * The keys of one JWKS endpoint. A fetch happens when the set is created, then on a timer every
 * max age (independent of requests), and when a kid that is not in the set shows up (at most once
 * per cooldown after the last fetch began and ended, shared by every request waiting on it). A failed fetch keeps the keys last fetched
 * (stale-if-error); a successful one reports the kids it no longer holds, so that tokens verified
 * with them stop counting at once.
 */
export class JwksKeySet {
  private resolver: JWTVerifyGetKey | undefined
  private kids = new Map<string, string>()
  private fetchedAt = Number.NEGATIVE_INFINITY
  private attemptedAt = Number.NEGATIVE_INFINITY
  private lastFetch: { at: number; error: string | null } | undefined
  private refused: RefusedKey[] = []
  private nextAt: number | undefined
  private inflight: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly abort = new AbortController()

  constructor(
    readonly url: string,
    private readonly options: KeySetOptions,
  ) {}

  private now(): number {
    return this.options.clock().getTime()
  }

  /** Starts a fetch unless one is running; resolves when it ends (it never rejects). */
  refresh(): Promise<void> {
    if (this.inflight) return this.inflight
    if (this.abort.signal.aborted) return Promise.resolve()
    this.attemptedAt = this.now()
    this.inflight = this.options.fetcher
      .fetch(this.url, this.abort.signal)
      .then((fetched) => {
        const { usable: jwks, refused } = screen(fetched)
        const kids = kidsOf(jwks)
        const retiredKids = [...this.kids].filter(([kid, json]) => kids.get(kid) !== json)
        this.resolver = createLocalJWKSet(jwks)
        this.kids = kids
        this.fetchedAt = this.now()
        this.lastFetch = { at: this.fetchedAt, error: null }
        this.refused = refused
        this.options.onFetch?.({
          ok: true,
          keys: jwks.keys.length,
          retiredKids: retiredKids.map(([kid]) => kid),
          refused,
        })
      })
      .catch((error: unknown) => {
        if (this.abort.signal.aborted) return
        this.lastFetch = { at: this.now(), error: fetchErrorText(error) }
        this.options.onFetch?.({ ok: false, error })
      })
      .finally(() => {
        // The cooldown counts from the end of a fetch too: a fetch that took as long as the
        // cooldown (a provider that never answers) must not let the request that waited for it
        // start another at once, each login then waiting two timeouts.
        this.attemptedAt = this.now()
        this.inflight = undefined
        this.schedule()
      })
    return this.inflight
  }

  /** The next timed refresh: max age after this fetch (and never within the cooldown). */
  private schedule(): void {
    clearTimeout(this.timer)
    if (this.abort.signal.aborted) return
    const delay = Math.min(
      MAX_TIMER_MS,
      Math.max(this.options.maxAgeMs, this.options.cooldownMs, MIN_TIMER_MS),
    )
    this.nextAt = this.now() + delay
    this.timer = setTimeout(() => void this.refresh(), delay)
    this.timer.unref()
  }

  private coolingDown(): boolean {
    return this.now() - this.attemptedAt < this.options.cooldownMs
  }

  /** Whether the set last fetched holds this kid. */
  hasKid(kid: string): boolean {
    return this.kids.has(kid)
  }

  /** Milliseconds since the epoch of the last successful fetch, if any. */
  lastSuccessAt(): number | undefined {
    return Number.isFinite(this.fetchedAt) ? this.fetchedAt : undefined
  }

  status(): KeySetStatus {
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString())
    return {
      kids: [...this.kids.keys()],
      lastFetchAt: iso(this.lastFetch?.at),
      lastFetchError: this.lastFetch?.error ?? null,
      nextRefreshAt: iso(this.nextAt),
      ...(this.refused.length > 0 ? { refusedKeys: this.refused } : {}),
    }
  }

  /** A jose key resolver: finds the key for a token header, refetching once for an unknown kid. */
  async getKey(header: CompactJWSHeaderParameters, token: FlattenedJWSInput): Promise<Key> {
    if (this.now() - this.fetchedAt >= this.options.maxAgeMs && !this.coolingDown()) {
      // Serve what we have while a fresh copy comes in; wait only when there is nothing yet.
      const pending = this.refresh()
      if (!this.resolver) await pending
    } else if (!this.resolver && this.inflight) {
      await this.inflight
    }
    try {
      if (!this.resolver) throw new errors.JWKSNoMatchingKey()
      return await this.resolver(header, token)
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err
      if (this.inflight) await this.inflight
      else if (this.coolingDown()) throw err
      else await this.refresh()
      if (!this.resolver) throw err
      return this.resolver(header, token)
    }
  }

  /** Ends any fetch under way and the refresh timer (the signer changed or the app closes). */
  close(): void {
    this.abort.abort()
    clearTimeout(this.timer)
    this.nextAt = undefined
  }
}
