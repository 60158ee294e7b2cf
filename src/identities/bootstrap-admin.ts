import { newId } from '../ids.js'
import type { Store, UnitOfWork } from '../store/contract.js'
import { hashPassword, randomPassword } from './password.js'

/** Where bootstrapAdmin says that it promoted an identity. */
export interface BootstrapLog {
  warn(obj: object, msg: string): void
}

/**
 * Makes sure the controller has an enabled admin. With none: an identity named `name` is promoted
 * and enabled (one `warn` line), or, when there is no such identity, created. When a password had
 * to be generated, `deliver` gets it before the change commits: if it throws, nothing is stored
 * (no admin whose password no one was told), and this rejects with its error. Resolves with the
 * generated password, otherwise undefined. On PostgreSQL this runs under the migration lock, so
 * instances starting together agree.
 */
export async function bootstrapAdmin(
  store: Store,
  clock: () => Date,
  name: string,
  password: string | undefined,
  log?: BootstrapLog,
  deliver?: (generated: string) => void | Promise<void>,
): Promise<string | undefined> {
  if ((await store.repos.identities.countEnabledAdmins()) > 0) return undefined
  const secret = password ?? randomPassword()
  const hash = await hashPassword(secret)
  const now = clock().toISOString()
  const outcome = await store.transaction(async (tx) => {
    const done = await bootstrapIn(tx, name, hash, now)
    const generated =
      (done === 'created' || done === 'promoted with password') && password === undefined
    if (generated) await deliver?.(secret)
    return done
  })
  if (outcome === 'promoted' || outcome === 'promoted with password') {
    // Without this the management API would answer 401 to everyone until SQL by hand.
    log?.warn({ identity: name }, 'no enabled admin: promoted and enabled the configured admin')
  }
  const passwordSet = outcome === 'created' || outcome === 'promoted with password'
  return passwordSet && password === undefined ? secret : undefined
}

/** The admin's promotion or creation within the bootstrap's unit of work. */
async function bootstrapIn(tx: UnitOfWork, name: string, hash: string, now: string) {
  await tx.identities.lockAdmins()
  if ((await tx.identities.countEnabledAdmins()) > 0) return 'none' as const
  const existing = await tx.identities.getByName(name)
  if (existing && !existing.isDefaultAdmin && existing.externalId !== null) {
    // An identity a token created or names (JWT enrollment takes its name from a claim the
    // provider's users may choose): never made an admin by a start.
    throw new Error(
      `no enabled admin, and the identity named "${name}" (CTRL_ADMIN_USER) has an externalId: it is not promoted; make an admin enabled by hand, or start with another CTRL_ADMIN_USER`,
    )
  }
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
  return 'created' as const
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
