import { createHash } from 'node:crypto'
import { AppError } from '../errors.js'
import type { LoginFailureRepository } from '../store/contract.js'

/** The backoff after consecutive failed password logins of one user name. */
export interface LockoutRules {
  /** Failures before the backoff starts; 0 turns it off. */
  attempts: number
  /** The first refusal interval; it doubles with each further failure. */
  firstMs: number
  /** The longest interval. */
  maxMs: number
}

export const DEFAULT_LOCKOUT: LockoutRules = { attempts: 10, firstMs: 1000, maxMs: 15 * 60_000 }

/**
 * An auth policy's `maxAttempts` and `lockoutDurationMinutes` as rules that replace the defaults:
 * maxAttempts 0 keeps the defaults; a duration of 0 keeps the default growing interval (OpenZiti
 * reads 0 as "locked until an admin unlocks", which would let anyone lock out any user name).
 */
export function policyLockout(
  maxAttempts: number,
  lockoutDurationMinutes: number,
): Partial<LockoutRules> | undefined {
  if (maxAttempts <= 0) return undefined
  if (lockoutDurationMinutes <= 0) return { attempts: maxAttempts }
  const ms = lockoutDurationMinutes * 60_000
  return { attempts: maxAttempts, firstMs: ms, maxMs: ms }
}

/**
 * The key a user name's count is stored under: a digest, never the name's text (a name no identity
 * has may be a password typed into the user name field, and the table is in every backup). The
 * same on every instance and after a restart.
 */
export function throttleKey(name: string): string {
  return createHash('sha256').update(`login-name:${name}`).digest('base64url')
}

/**
 * With the default rules, how many times a name's own count may exceed a client address's before
 * the name locks from every address: the backoff of one address does not lock the name's owner
 * out, and many addresses together get at most this many times the attempts before it does.
 */
export const NAME_WIDE_FACTOR = 10

/** The key of a user name's count from one client address (an IPv6 client's /64). */
export function addressThrottleKey(name: string, address: string): string {
  return createHash('sha256').update(`login-name-address:${address}\n${name}`).digest('base64url')
}

/**
 * Counts failed password logins. With the default rules a name is counted twice: from the client's
 * address, and from every address together. From the `attempts`-th consecutive failure from one
 * address on, the name's logins from that address are refused with 429 for an interval that starts
 * at `firstMs` and doubles with each failure after (at most `maxMs`); the name locks for every
 * address the same way from `attempts * NAME_WIDE_FACTOR` failures on. An auth policy's lockout
 * counts the name only, whatever the address, as OpenZiti's does. A success resets the name's
 * counts. The counts live in the store, so on PostgreSQL every instance shares them.
 */
export class LoginThrottle {
  constructor(
    private readonly repo: LoginFailureRepository,
    private readonly clock: () => Date,
    private readonly rules: LockoutRules = DEFAULT_LOCKOUT,
  ) {}

  get enabled(): boolean {
    return this.rules.attempts > 0
  }

  /**
   * Throws RATE_LIMITED while the name is in its backoff, from everywhere or from `address`
   * (before any hashing).
   */
  async check(name: string, address?: string): Promise<void> {
    // Read even when the defaults are off: a policy's maxAttempts may have locked the name.
    await this.refuseWhileLocked(throttleKey(name))
    if (address !== undefined && this.enabled) {
      await this.refuseWhileLocked(addressThrottleKey(name, address))
    }
  }

  private async refuseWhileLocked(key: string): Promise<void> {
    const record = await this.repo.get(key)
    if (!record?.lockedUntil) return
    const waitMs = Date.parse(record.lockedUntil) - this.clock().getTime()
    if (waitMs > 0) {
      const seconds = String(Math.ceil(waitMs / 1000))
      throw new AppError('RATE_LIMITED', { headers: { 'retry-after': seconds } })
    }
  }

  /**
   * Counts a failure from `address` (absent: the name alone is counted, with `attempts`); `rules`
   * (an auth policy's maxAttempts and lockout) replace the defaults for this name, counted by name
   * only; `known`: the name is an identity's (its count is never forgotten to make room for
   * made-up names; default: not, the bounded kind, as every address's count is).
   */
  async failed(
    name: string,
    rules?: Partial<LockoutRules>,
    known = false,
    address?: string,
  ): Promise<void> {
    const merged = { ...this.rules, ...rules }
    if (merged.attempts <= 0) return
    const now = this.clock()
    if (rules !== undefined || address === undefined) {
      await this.count(throttleKey(name), merged, known, now)
      return
    }
    await this.count(addressThrottleKey(name, address), merged, false, now)
    const nameWide = { ...merged, attempts: merged.attempts * NAME_WIDE_FACTOR }
    await this.count(throttleKey(name), nameWide, known, now)
  }

  private async count(key: string, rules: LockoutRules, known: boolean, now: Date): Promise<void> {
    const failures = await this.repo.addFailure(key, now.toISOString(), known)
    if (failures < rules.attempts) return
    const exponent = Math.min(failures - rules.attempts, 30)
    const ms = Math.min(rules.maxMs, rules.firstMs * 2 ** exponent)
    await this.repo.lockUntil(key, new Date(now.getTime() + ms).toISOString())
  }

  /** A success: the name starts again with clean counts, from everywhere and from `address`. */
  async succeeded(name: string, address?: string): Promise<void> {
    await this.repo.clear(throttleKey(name))
    if (address !== undefined) await this.repo.clear(addressThrottleKey(name, address))
  }

  /** Forgets counts untouched for a day (their names' backoff, at most 15 minutes, is over). */
  purge(): Promise<number> {
    return this.repo.deleteBefore(new Date(this.clock().getTime() - 86_400_000).toISOString())
  }
}
