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
 * Counts failed password logins by user name, whatever the client address: from the
 * `attempts`-th consecutive failure on, the name's logins are refused with 429 for an interval
 * that starts at `firstMs` and doubles with each failure after (at most `maxMs`); a success resets
 * the count. The count lives in the store, so on PostgreSQL every instance shares it.
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

  /** Throws RATE_LIMITED while the name is in its backoff (before any hashing). */
  async check(name: string): Promise<void> {
    // Read even when the defaults are off: a policy's maxAttempts may have locked the name.
    const record = await this.repo.get(throttleKey(name))
    if (!record?.lockedUntil) return
    const waitMs = Date.parse(record.lockedUntil) - this.clock().getTime()
    if (waitMs > 0) {
      const seconds = String(Math.ceil(waitMs / 1000))
      throw new AppError('RATE_LIMITED', { headers: { 'retry-after': seconds } })
    }
  }

  /**
   * Counts a failure; `rules` (an auth policy's maxAttempts and lockout) replace the defaults for
   * this name where given; `known`: the name is an identity's (its count is never forgotten to
   * make room for made-up names; default: not, the bounded kind).
   */
  async failed(name: string, rules?: Partial<LockoutRules>, known = false): Promise<void> {
    const { attempts, firstMs, maxMs } = { ...this.rules, ...rules }
    if (attempts <= 0) return
    const now = this.clock()
    const key = throttleKey(name)
    const failures = await this.repo.addFailure(key, now.toISOString(), known)
    if (failures < attempts) return
    const ms = Math.min(maxMs, firstMs * 2 ** Math.min(failures - attempts, 30))
    await this.repo.lockUntil(key, new Date(now.getTime() + ms).toISOString())
  }

  /** A success: the name starts again with a clean count. */
  async succeeded(name: string): Promise<void> {
    await this.repo.clear(throttleKey(name))
  }

  /** Forgets counts untouched for a day (their names' backoff, at most 15 minutes, is over). */
  purge(): Promise<number> {
    return this.repo.deleteBefore(new Date(this.clock().getTime() - 86_400_000).toISOString())
  }
}
