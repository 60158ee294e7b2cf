import type { Store } from './contract.js'
import type { ListQuery } from './query/list-query.js'

/** Every row, in id order. */
const EVERYTHING: ListQuery = {
  where: { type: 'const', value: true },
  orderBy: [{ column: 'id', desc: false }],
  limit: undefined,
  offset: 0,
}

export interface CopyCounts {
  signers: number
  policies: number
  identities: number
  sessions: number
}

/**
 * Copies every entity of one store into another in one unit of work on the target: signers, then
 * policies (the built-in default replaced by the source's), identities with their password hashes, and
 * live sessions. The target must hold no signers or identities yet; on any failure it is unchanged.
 */
export async function copyStore(from: Store, to: Store): Promise<CopyCounts> {
  const signers = await from.repos.signers.all()
  const policies = (await from.repos.policies.list(EVERYTHING)).items
  const identities = (await from.repos.identities.list(EVERYTHING)).items
  const hashes = new Map<string, string | null>()
  for (const i of identities) hashes.set(i.id, await from.repos.identities.passwordHash(i.id))
  const sessions = await from.repos.sessions.all()
  // The target's foreign key (PostgreSQL, migration 014) would refuse it at commit, naming nothing.
  const policyIds = new Set(policies.map((p) => p.id))
  for (const s of signers) {
    if (!policyIds.has(s.enrollAuthPolicyId)) {
      throw new Error(
        `signer ${s.id} enrolls into auth policy ${s.enrollAuthPolicyId} (enrollAuthPolicyId), ` +
          'which does not exist; give it a policy that exists, then copy again',
      )
    }
  }
  await to.transaction(async (tx) => {
    const existing = await tx.identities.list({ ...EVERYTHING, limit: 1 })
    const existingSigners = await tx.signers.list({ ...EVERYTHING, limit: 1 })
    if (existing.totalCount > 0 || existingSigners.totalCount > 0) {
      throw new Error('the target already holds signers or identities; copy into an empty store')
    }
    for (const s of signers) await tx.signers.insert(s)
    for (const p of policies) {
      await tx.policies.delete(p.id) // the target's own built-in default, replaced as it was
      await tx.policies.insert(p)
    }
    for (const i of identities) {
      await tx.identities.insert(i)
      const hash = hashes.get(i.id)
      if (hash) await tx.identities.setPasswordHash(i.id, hash, i.updatedAt)
    }
    for (let n = 0; n < sessions.length; n += 500) {
      await tx.sessions.insertMany(sessions.slice(n, n + 500))
    }
  })
  return {
    signers: signers.length,
    policies: policies.length,
    identities: identities.length,
    sessions: sessions.length,
  }
}
