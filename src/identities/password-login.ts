import { AppError } from '../errors.js'
import type { IdentityRecord } from '../store/contract.js'
import type { LockoutRules, LoginThrottle } from './login-throttle.js'
import { verifyPassword } from './password.js'

/**
 * Why a password login failed, as the audit trail records it (the client sees one 401). `changed`:
 * the password matched, but the identity was disabled, deleted or given a new password before the
 * login's session was stored (the store refused it).
 */
export type PasswordFailure = 'unknown-user' | 'wrong-password' | 'disabled' | 'policy' | 'changed'

/** What password login needs: the stored credentials and the policy rule. */
export interface PasswordLoginDeps {
  credentials(name: string): Promise<{ identity: IdentityRecord | undefined; hash: string | null }>
  allowsPrimary(identity: IdentityRecord, method: 'updb'): Promise<boolean>
  /** The per-user-name backoff after repeated failures (absent: none). */
  throttle?: LoginThrottle | undefined
  /** The identity's auth policy lockout, replacing the throttle's defaults (absent: defaults). */
  lockoutOf?: ((identity: IdentityRecord) => Promise<Partial<LockoutRules> | undefined>) | undefined
  /** Told of each failure (the audit trail) and its request's id, never of the password. */
  onFailure?:
    | ((
        username: string,
        identity: IdentityRecord | undefined,
        reason: PasswordFailure,
        requestId: string | null,
      ) => Promise<void>)
    | undefined
}

/**
 * Checks a username and password; resolves with the identity and the hash the password matched.
 * Every failure (unknown name, wrong password, disabled identity,
 * policy refusing password login) is the same 401, and costs the same scrypt work; a name in its
 * backoff (from everywhere, or from this address) is refused with 429 before any hashing.
 */
export async function checkPassword(
  deps: PasswordLoginDeps,
  username: string,
  password: string,
  /** The request's id, for the audit event of a failure. */
  requestId: string | null = null,
  /** The client's address as the login limits key it (absent: the name is counted alone). */
  address?: string,
  /**
   * Called once the backoff let the login through, before any hashing (the name's rate limit, so
   * that refusals of a locked-out address take nothing from the name's allowance elsewhere).
   */
  admitted?: () => void,
): Promise<{ identity: IdentityRecord; hash: string }> {
  await deps.throttle?.check(username, address)
  admitted?.()
  const { identity, hash } = await deps.credentials(username)
  const ok = await verifyPassword(password, hash)
  const reason: PasswordFailure | undefined = !identity
    ? 'unknown-user'
    : !ok
      ? 'wrong-password'
      : identity.disabled
        ? 'disabled'
        : !(await deps.allowsPrimary(identity, 'updb'))
          ? 'policy'
          : undefined
  if (reason !== undefined || !identity || hash === null) {
    const rules = identity ? await deps.lockoutOf?.(identity) : undefined
    await deps.throttle?.failed(username, rules, identity !== undefined, address)
    await deps.onFailure?.(username, identity, reason ?? 'unknown-user', requestId)
    throw new AppError('INVALID_AUTH')
  }
  await deps.throttle?.succeeded(username, address)
  // The hash the password was checked against: the login is stored only while it is the
  // identity's (a password changed meanwhile refuses it; see the store's `recordLogins`).
  return { identity, hash }
}

/**
 * A password login that passed `checkPassword` and was then refused by the store (`changed`): a
 * failure as any other, for the audit trail and the backoff, whose count the check had cleared.
 */
export async function refusedAfterCheck(
  deps: PasswordLoginDeps,
  username: string,
  identity: IdentityRecord,
  requestId: string | null,
  address?: string,
): Promise<void> {
  const rules = await deps.lockoutOf?.(identity)
  await deps.throttle?.failed(username, rules, true, address)
  await deps.onFailure?.(username, identity, 'changed', requestId)
}
