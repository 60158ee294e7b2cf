import { AppError } from '../errors.js'

// Keys tracked at most per limiter; beyond, the least recently refilled is forgotten (a key
// forgotten starts again with a full bucket, so this bounds memory, never tightens a limit).
const MAX_KEYS = 100_000

interface Bucket {
  tokens: number
  at: number
}

/**
 * Token buckets by key: each holds at most `perSecond` tokens and regains `perSecond` a second,
 * so no one-second span lets more than twice the rate through and a steady client gets the rate
 * (unlike a fixed window, there is no boundary at which a full second's worth comes twice).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>()

  constructor(
    private readonly perSecond: number,
    private readonly clock: () => Date,
  ) {}

  /** Takes one token for `key`: 0 when granted, otherwise the seconds until one is available. */
  take(key: string): number {
    const now = this.clock().getTime()
    const bucket = this.buckets.get(key)
    let tokens = this.perSecond
    if (bucket) {
      this.buckets.delete(key) // re-inserted below: the map stays in order of last use
      tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond)
    } else if (this.buckets.size >= MAX_KEYS) {
      const oldest = this.buckets.keys().next().value as string // the map is not empty
      this.buckets.delete(oldest)
    }
    const granted = tokens >= 1
    this.buckets.set(key, { tokens: granted ? tokens - 1 : tokens, at: now })
    return granted ? 0 : Math.max(1, Math.ceil((1 - tokens) / this.perSecond))
  }
}

/** Login rates, per second; 0 turns a limit off. */
export interface LoginLimits {
  perAddress: number
  perIdentity: number
}

/**
 * The login rate limits of one controller process: one instance is shared by the login routes of
 * both API prefixes, so a client gets the same allowance whichever prefix it uses. Counts are per
 * instance (each instance of a cluster keeps its own).
 */
export class LoginLimiter {
  private readonly addresses: TokenBuckets | undefined
  private readonly names: TokenBuckets | undefined

  constructor(limits: LoginLimits, clock: () => Date) {
    this.addresses = limits.perAddress > 0 ? new TokenBuckets(limits.perAddress, clock) : undefined
    this.names = limits.perIdentity > 0 ? new TokenBuckets(limits.perIdentity, clock) : undefined
  }

  /** Before anything else of a login: the client address's allowance. */
  address(ip: string): void {
    refuseIfWaiting(this.addresses?.take(ip) ?? 0)
  }

  /**
   * The allowance of one identity or user name (`name:` for a password login's user name, before
   * any hashing; `id:` for an identity a token named).
   */
  identity(key: string): void {
    refuseIfWaiting(this.names?.take(key) ?? 0)
  }
}

function refuseIfWaiting(seconds: number): void {
  if (seconds > 0) {
    throw new AppError('RATE_LIMITED', { headers: { 'retry-after': String(seconds) } })
  }
}
