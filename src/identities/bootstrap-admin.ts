import { newId } from '../ids.js'
import type { Store } from '../store/contract.js'
import { hashPassword, randomPassword } from './password.js'

/**
 * Creates the first admin when the database has none. Resolves with the generated password when
 * the operator gave none (the caller prints it once), otherwise undefined. On PostgreSQL this runs
 * under the migration lock, so instances starting together create one admin.
 */
export async function bootstrapAdmin(
  store: Store,
  clock: () => Date,
  name: string,
  password: string | undefined,
): Promise<string | undefined> {
  if (await store.repos.identities.hasAdmin()) return undefined
  const secret = password ?? randomPassword()
  const hash = await hashPassword(secret)
  const now = clock().toISOString()
  const created = await store.transaction(async (tx) => {
    if (await tx.identities.hasAdmin()) return false
    const id = newId()
    await tx.identities.insert({
      id,
      name,
      externalId: null,
      isAdmin: true,
      isDefaultAdmin: true,
      disabled: false,
      authPolicyId: 'default',
      roleAttributes: [],
      tags: {},
      createdAt: now,
      updatedAt: now,
    })
    await tx.identities.setPasswordHash(id, hash, now)
    return true
  })
  return created && password === undefined ? secret : undefined
}
