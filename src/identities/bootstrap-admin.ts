import { newId } from '../ids.js'
import type { Db } from '../store/db.js'
import { IdentityRepository } from '../store/identity-repository.js'
import { hashPassword, randomPassword } from './password.js'

/**
 * Creates the first admin when the database has none. Returns the generated password when the
 * operator gave none (the caller prints it once), otherwise undefined.
 */
export async function bootstrapAdmin(
  db: Db,
  clock: () => Date,
  name: string,
  password: string | undefined,
): Promise<string | undefined> {
  const identities = new IdentityRepository(db)
  if (identities.hasAdmin()) return undefined
  const secret = password ?? randomPassword()
  const hash = await hashPassword(secret)
  const now = clock().toISOString()
  const created = db.transaction(() => {
    if (identities.hasAdmin()) return false
    const id = newId()
    identities.insert({
      id,
      name,
      externalId: null,
      isAdmin: true,
      isDefaultAdmin: true,
      disabled: false,
      authPolicyId: 'default',
      tags: {},
      createdAt: now,
      updatedAt: now,
    })
    identities.setPasswordHash(id, hash, now)
    return true
  })()
  return created && password === undefined ? secret : undefined
}
