import { AppError } from '../../errors.js'
import type { IntegrityFacts } from '../contract.js'
import type { Queryable } from './connection.js'
import { mapPgError } from './errors.js'

/** PostgreSQL backs up with its own tools; the refusal says which, and where the recipe is. */
export function snapshotRefused(): AppError {
  return new AppError('SNAPSHOT_NOT_SUPPORTED', {
    message:
      'snapshots are taken by the controller only on SQLite; on PostgreSQL use pg_dump -Fc (see the README section "Backups")',
  })
}

interface IdentityFactRow {
  id: string
  auth_policy_id: string
  external_id: string | null
  is_admin: boolean
  disabled: boolean
}

/** The ids and references the controller's own integrity rules read. */
export async function pgIntegrityFacts(db: Queryable): Promise<IntegrityFacts> {
  try {
    const ids = async (sql: string) => (await db.query<{ id: string }>(sql)).rows.map((r) => r.id)
    const refs = await db.query<{ policyId: string; field: string; signerId: string }>(
      `SELECT policy_id AS "policyId", 'primary.extJwt.allowedSigners' AS field,
              signer_id AS "signerId"
         FROM auth_policy_signers
       UNION ALL
       SELECT id, 'secondary.requireExtJwtSigner', secondary_require_ext_jwt_signer
         FROM auth_policies WHERE secondary_require_ext_jwt_signer IS NOT NULL`,
    )
    const enroll = await db.query<{ signerId: string; policyId: string }>(
      'SELECT id AS "signerId", enroll_auth_policy_id AS "policyId" FROM signers',
    )
    const identities = await db.query<IdentityFactRow>(
      'SELECT id, auth_policy_id, external_id, is_admin, disabled FROM identities',
    )
    return {
      signerIds: await ids('SELECT id FROM signers'),
      policyIds: await ids('SELECT id FROM auth_policies'),
      policySignerRefs: refs.rows,
      signerEnrollPolicies: enroll.rows,
      identities: identities.rows.map((r) => ({
        id: r.id,
        authPolicyId: r.auth_policy_id,
        externalId: r.external_id,
        isAdmin: r.is_admin,
        disabled: r.disabled,
      })),
    }
  } catch (err) {
    throw mapPgError(err)
  }
}
