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
 * With the default rules, how many addresses' worth of failures lock a name from every address:
 * each address adds at most `attempts` failures to the name's own count (those before its own
 * backoff), so this many addresses are needed at least.
 */
export const NAME_WIDE_FACTOR = 10

/** How long an address a name logged in from is exempt from the name's lock from everywhere. */
export const FAMILIAR_MS = 30 * 86_400_000

/** The key of a user name's count from one client address (an IPv6 client's /64). */
export function addressThrottleKey(name: string, address: string): string {
  return createHash('sha256').update(`login-name-address:${address}\n${name}`).digest('base64url')
}

/** The key of a user name's count from every address under the default rules. */
export function nameWideKey(name: string): string {
  return createHash('sha256').update(`login-name-wide:${name}`).digest('base64url')
}

/** The key under which an address a name logged in from is remembered (see `FAMILIAR_MS`). */
export function familiarKey(name: string, address: string): string {
  return createHash('sha256').update(`login-familiar:${address}\n${name}`).digest('base64url')
}

/**
 * Counts failed password logins. With the default rules a name is counted twice: from the client's
 * address, and from every address together. From the `attempts`-th consecutive failure from one
 * address on, the name's logins from that address are refused with 429 for an interval that starts
 * at `firstMs` and doubles with each failure after (at most `maxMs`). Each address adds its first
 * `attempts` failures to the name's count from every address, which locks the name for every
 * address the same way from `attempts * NAME_WIDE_FACTOR` failures on, but for addresses the name
 * logged in from within `FAMILIAR_MS`: one address cannot lock a name's owner out elsewhere, and
 * many cannot lock the owner out of where the owner logs in from. An auth policy's lockout counts
 * the name only (under `throttleKey`), whatever the address, familiar or not, as OpenZiti's does.
 * A success clears the name's counts from every address and from its own. The counts live in the
 * store, so on PostgreSQL every instance shares them (an address remembered as familiar is kept as
 * a row whose lock is how long it stays so).
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
   * Throws RATE_LIMITED while the name is in its backoff, from everywhere (unless `address` is
   * familiar) or from `address`, with the longer wait (before any hashing).
   */
  async check(name: string, address?: string): Promise<void> {
    // Read even when the defaults are off: a policy's maxAttempts may have locked the name (its
    // lock holds whatever the address, familiar or not).
    let waitMs = await this.lockedFor(throttleKey(name))
    if (address !== undefined && this.enabled) {
      const nameWide = await this.lockedFor(nameWideKey(name))
      if (nameWide > 0 && (await this.lockedFor(familiarKey(name, address))) === 0) {
        waitMs = Math.max(waitMs, nameWide)
      }
      waitMs = Math.max(waitMs, await this.lockedFor(addressThrottleKey(name, address)))
    }
    if (waitMs > 0) {
      const seconds = String(Math.ceil(waitMs / 1000))
      throw new AppError('RATE_LIMITED', { headers: { 'retry-after': seconds } })
    }
  }

  /** How long the row under `key` stays locked from now; 0 when it is not. */
  private async lockedFor(key: string): Promise<number> {
    const record = await this.repo.get(key)
    if (!record?.lockedUntil) return 0
    return Math.max(0, Date.parse(record.lockedUntil) - this.clock().getTime())
  }

  /**
   * Counts a failure from `address` (absent: the name alone is counted, with `attempts`); `rules`
   * (an auth policy's maxAttempts and lockout) replace the defaults for this name, counted by name
   * only; `known`: the name is an identity's (its counts are never forgotten to make room for
   * made-up names; default: not, the bounded kind).
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
    const fromAddress = await this.count(addressThrottleKey(name, address), merged, known, now)
    if (fromAddress > merged.attempts) return // an address in its backoff adds no more
    const nameWide = { ...merged, attempts: merged.attempts * NAME_WIDE_FACTOR }
    await this.count(nameWideKey(name), nameWide, known, now)
  }

  /** Counts a failure under `key`, locking it from `rules.attempts` on; resolves with the count. */
  private async count(key: string, rules: LockoutRules, known: boolean, now: Date) {
    const failures = await this.repo.addFailure(key, now.toISOString(), known)
    if (failures < rules.attempts) return failures
    const exponent = Math.min(failures - rules.attempts, 30)
    const ms = Math.min(rules.maxMs, rules.firstMs * 2 ** exponent)
    await this.repo.lockUntil(key, new Date(now.getTime() + ms).toISOString())
    return failures
  }

  /**
   * A success from `address`: the name's count from every address and from this one start again,
   * and this address is familiar to the name for `FAMILIAR_MS` (other addresses keep their counts).
   */
  async succeeded(name: string, address?: string): Promise<void> {
    await this.repo.clear(throttleKey(name))
    if (address === undefined) return
    await this.repo.clear(nameWideKey(name))
    await this.repo.clear(addressThrottleKey(name, address))
    if (!this.enabled) return
    const now = this.clock()
    const key = familiarKey(name, address)
    await this.repo.addFailure(key, now.toISOString(), true)
    await this.repo.lockUntil(key, new Date(now.getTime() + FAMILIAR_MS).toISOString())
  }

  /** Forgets counts untouched for a day (their names' backoff, at most 15 minutes, is over). */
  purge(): Promise<number> {
    return this.repo.deleteBefore(new Date(this.clock().getTime() - 86_400_000).toISOString())
  }
}
