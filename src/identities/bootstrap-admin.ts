import { newId } from '../ids.js'
import type { Store, UnitOfWork } from '../store/contract.js'
import { hashPassword, randomPassword } from './password.js'

/** Where bootstrapAdmin says that it promoted an identity. */
export interface BootstrapLog {
  warn(obj: object, msg: string): void
}

/**
 * Makes sure the controller has an enabled admin. With none: an identity named `name` is promoted
 * and enabled (one `warn` line), or, when there is no such identity, created. Resolves with the
 * generated password when one was needed (the caller prints it once), otherwise undefined. On
 * PostgreSQL this runs under the migration lock, so instances starting together agree.
 */
export async function bootstrapAdmin(
  store: Store,
  clock: () => Date,
  name: string,
  password: string | undefined,
  log?: BootstrapLog,
): Promise<string | undefined> {
  if ((await store.repos.identities.countEnabledAdmins()) > 0) return undefined
  const secret = password ?? randomPassword()
  const hash = await hashPassword(secret)
  const now = clock().toISOString()
  const outcome = await store.transaction(async (tx) => {
    await tx.identities.lockAdmins()
    if ((await tx.identities.countEnabledAdmins()) > 0) return 'none'
    const existing = await tx.identities.getByName(name)
    if (existing) return promote(tx, existing.id, hash, now)
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
    return 'created'
  })
  if (outcome === 'promoted' || outcome === 'promoted with password') {
    // Without this the management API would answer 401 to everyone until SQL by hand.
    log?.warn({ identity: name }, 'no enabled admin: promoted and enabled the configured admin')
  }
  const passwordSet = outcome === 'created' || outcome === 'promoted with password'
  return passwordSet && password === undefined ? secret : undefined
}

/** Makes an existing identity an enabled admin; gives it the password only if it has none. */
async function promote(tx: UnitOfWork, id: string, hash: string, now: string) {
  const current = await tx.identities.get(id)
  if (!current) return 'none' as const // read under the same unit of work just before
  await tx.identities.update({ ...current, isAdmin: true, disabled: false, updatedAt: now })
  await tx.publish({ entity: 'identity', op: 'upsert', id })
  if ((await tx.identities.passwordHash(id)) !== null) return 'promoted' as const
  await tx.identities.setPasswordHash(id, hash, now)
  return 'promoted with password' as const
}
