import { AppError } from '../errors.js'
import type { IdentityRecord, IdentityRepository } from '../store/identity-repository.js'
import { verifyPassword } from './password.js'

/** Decides whether an identity's authentication policy lets it use a primary method. */
export type PrimaryMethodCheck = (identity: IdentityRecord, method: 'updb') => boolean

/**
 * Checks a username and password. Every failure (unknown name, wrong password, disabled identity,
 * policy refusing password login) is the same 401, and costs the same scrypt work.
 */
export async function checkPassword(
  identities: IdentityRepository,
  username: string,
  password: string,
  allows: PrimaryMethodCheck,
): Promise<IdentityRecord> {
  const identity = identities.getByName(username)
  const hash = identity ? identities.passwordHash(identity.id) : null
  const ok = await verifyPassword(password, hash)
  if (!ok || !identity || identity.disabled || !allows(identity, 'updb')) {
    throw new AppError('INVALID_AUTH')
  }
  return identity
}
