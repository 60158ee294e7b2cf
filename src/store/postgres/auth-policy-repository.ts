import type { AuthPolicyRecord, AuthPolicyRepository } from '../contract.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'
import { PgListRunner } from './list-runner.js'

interface PolicyRow {
  id: string
  name: string
  cert_allowed: boolean
  cert_allow_expired: boolean
  updb_allowed: boolean
  updb_min_password_length: number
  updb_require_special_char: boolean
  updb_require_number_char: boolean
  updb_require_mixed_case: boolean
  updb_max_attempts: number
  updb_lockout_duration_minutes: number
  ext_jwt_allowed: boolean
  allowed_signers: string[]
  secondary_require_ext_jwt_signer: string | null
  tags: Record<string, unknown>
  created_at: Date
  updated_at: Date
}

function toRecord(r: PolicyRow): AuthPolicyRecord {
  return {
    id: r.id,
    name: r.name,
    certAllowed: r.cert_allowed,
    certAllowExpired: r.cert_allow_expired,
    updbAllowed: r.updb_allowed,
    updbMinPasswordLength: r.updb_min_password_length,
    updbRequireSpecialChar: r.updb_require_special_char,
    updbRequireNumberChar: r.updb_require_number_char,
    updbRequireMixedCase: r.updb_require_mixed_case,
    updbMaxAttempts: r.updb_max_attempts,
    updbLockoutDurationMinutes: r.updb_lockout_duration_minutes,
    extJwtAllowed: r.ext_jwt_allowed,
    allowedSigners: r.allowed_signers,
    requireExtJwtSigner: r.secondary_require_ext_jwt_signer,
    tags: r.tags,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }
}

function values(p: AuthPolicyRecord): unknown[] {
  return [
    p.id,
    p.name,
    p.certAllowed,
    p.updbAllowed,
    p.updbMinPasswordLength,
    p.updbRequireSpecialChar,
    p.updbRequireNumberChar,
    p.updbRequireMixedCase,
    p.extJwtAllowed,
    p.requireExtJwtSigner,
    JSON.stringify(p.tags),
    p.updatedAt,
    p.updbMaxAttempts,
    p.updbLockoutDurationMinutes,
    p.certAllowExpired,
    p.createdAt,
  ]
}

/** Policies with their allowed signers in order, as one relation lists and reads can share. */
const WITH_SIGNERS = `(SELECT p.*, COALESCE((SELECT array_agg(s.signer_id ORDER BY s.position)
  FROM auth_policy_signers s WHERE s.policy_id = p.id), '{}') AS allowed_signers
  FROM auth_policies p) AS auth_policies`
const UNIQUE = { auth_policies_name_key: 'name' }

/** Persistence of authentication policies on PostgreSQL. Writes belong in a unit of work. */
export class PgAuthPolicyRepository implements AuthPolicyRepository {
  private static readonly lists = new PgListRunner<PolicyRow, AuthPolicyRecord>(
    WITH_SIGNERS,
    toRecord,
  )

  constructor(private readonly db: Queryable) {}

  private async query(text: string, params: unknown[], record?: AuthPolicyRecord) {
    try {
      return await this.db.query(text, params)
    } catch (err) {
      throw mapPgError(err, UNIQUE, record ? { ...record } : {})
    }
  }

  private async writeSigners(p: AuthPolicyRecord): Promise<void> {
    await this.query('DELETE FROM auth_policy_signers WHERE policy_id = $1', [p.id])
    if (p.allowedSigners.length === 0) return
    await this.query(
      `INSERT INTO auth_policy_signers (policy_id, signer_id, position)
       SELECT $1, s, o - 1 FROM unnest($2::text[]) WITH ORDINALITY AS t(s, o)
       ON CONFLICT DO NOTHING`,
      [p.id, p.allowedSigners],
    )
  }

  async insert(p: AuthPolicyRecord): Promise<void> {
    await this.query(
      `INSERT INTO auth_policies (id, name, cert_allowed, updb_allowed, updb_min_password_length,
         updb_require_special_char, updb_require_number_char, updb_require_mixed_case,
         ext_jwt_allowed, secondary_require_ext_jwt_signer, tags, updated_at,
         updb_max_attempts, updb_lockout_duration_minutes, cert_allow_expired, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      values(p),
      p,
    )
    await this.writeSigners(p)
  }

  async update(p: AuthPolicyRecord): Promise<boolean> {
    const res = await this.query(
      `UPDATE auth_policies SET name = $2, cert_allowed = $3, updb_allowed = $4,
         updb_min_password_length = $5, updb_require_special_char = $6,
         updb_require_number_char = $7, updb_require_mixed_case = $8, ext_jwt_allowed = $9,
         secondary_require_ext_jwt_signer = $10, tags = $11, updated_at = $12,
         updb_max_attempts = $13, updb_lockout_duration_minutes = $14, cert_allow_expired = $15
       WHERE id = $1`,
      values(p).slice(0, 15),
      p,
    )
    if ((res.rowCount ?? 0) === 0) return false
    await this.writeSigners(p)
    return true
  }

  async delete(id: string): Promise<boolean> {
    const res = await this.query('DELETE FROM auth_policies WHERE id = $1', [id])
    return (res.rowCount ?? 0) > 0
  }

  async get(id: string): Promise<AuthPolicyRecord | undefined> {
    const res = await this.query(`SELECT * FROM ${WITH_SIGNERS} WHERE id = $1`, [id])
    const row = res.rows[0] as PolicyRow | undefined // columns of WITH_SIGNERS
    return row ? toRecord(row) : undefined
  }

  async getForUpdate(id: string): Promise<AuthPolicyRecord | undefined> {
    // The policy's row, locked; its signers are written only with it (in the same unit of work).
    await this.query('SELECT id FROM auth_policies WHERE id = $1 FOR NO KEY UPDATE', [id])
    return this.get(id)
  }

  list(query: ListQuery): Promise<ListPage<AuthPolicyRecord>> {
    return PgAuthPolicyRepository.lists.run(this.db, query)
  }

  async signerReference(signerId: string): Promise<string | undefined> {
    const res = await this.query(
      `SELECT CASE WHEN EXISTS (SELECT 1 FROM auth_policy_signers WHERE signer_id = $1)
         THEN 'primary.extJwt.allowedSigners'
         WHEN EXISTS (SELECT 1 FROM auth_policies WHERE secondary_require_ext_jwt_signer = $1)
         THEN 'secondary.requireExtJwtSigner' END AS field`,
      [signerId],
    )
    // pg types rows as any: the one column `field` of the query above, in at most one row
    return (res.rows[0] as { field: string | null } | undefined)?.field ?? undefined
  }

  async isUsedByIdentity(policyId: string): Promise<boolean> {
    const res = await this.query('SELECT 1 FROM identities WHERE auth_policy_id = $1 LIMIT 1', [
      policyId,
    ])
    return res.rows.length > 0
  }
}
