import { AppError } from '../errors.js'
import type { IdentityRecord } from '../store/contract.js'
import { verifyPassword } from './password.js'

/** What password login needs: the stored credentials and the policy rule. */
export interface PasswordLoginDeps {
  credentials(name: string): Promise<{ identity: IdentityRecord | undefined; hash: string | null }>
  allowsPrimary(identity: IdentityRecord, method: 'updb'): Promise<boolean>
}

/**
 * Checks a username and password. Every failure (unknown name, wrong password, disabled identity,
 * policy refusing password login) is the same 401, and costs the same scrypt work.
 */
export async function checkPassword(
  deps: PasswordLoginDeps,
  username: string,
  password: string,
): Promise<IdentityRecord> {
  const { identity, hash } = await deps.credentials(username)
  const ok = await verifyPassword(password, hash)
  if (!ok || !identity || identity.disabled || !(await deps.allowsPrimary(identity, 'updb'))) {
    throw new AppError('INVALID_AUTH')
  }
  return identity
}
