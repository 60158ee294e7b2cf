import {
  type CompactJWSHeaderParameters,
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type JWTVerifyGetKey,
} from 'jose'
import type { JwksFetcher } from './jwks-fetch.js'

export interface KeySetOptions {
  fetcher: JwksFetcher
  clock: () => Date
  cooldownMs: number
  maxAgeMs: number
  onFetch?: (result: { ok: true; keys: number } | { ok: false; error: unknown }) => void
}

type Key = Awaited<ReturnType<JWTVerifyGetKey>>

/**
 * The keys of one JWKS endpoint. Fetches happen in the background when the set is created and when
 * it is older than maxAge; a kid that is not in the set triggers a fetch at most once per cooldown,
 * shared by every request waiting on it. A failed fetch keeps the keys last fetched (stale-if-error).
 */
export class JwksKeySet {
  private resolver: JWTVerifyGetKey | undefined
  private fetchedAt = Number.NEGATIVE_INFINITY
  private attemptedAt = Number.NEGATIVE_INFINITY
  private inflight: Promise<void> | undefined
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
    this.attemptedAt = this.now()
    this.inflight = this.options.fetcher
      .fetch(this.url, this.abort.signal)
      .then((jwks) => {
        this.resolver = createLocalJWKSet(jwks)
        this.fetchedAt = this.now()
        this.options.onFetch?.({ ok: true, keys: jwks.keys.length })
      })
      .catch((error: unknown) => {
        if (!this.abort.signal.aborted) this.options.onFetch?.({ ok: false, error })
      })
      .finally(() => {
        this.inflight = undefined
      })
    return this.inflight
  }

  private coolingDown(): boolean {
    return this.now() - this.attemptedAt < this.options.cooldownMs
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

  /** Ends any fetch under way (the signer changed or the app closes). */
  close(): void {
    this.abort.abort()
  }
}
