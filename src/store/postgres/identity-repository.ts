import type { CertAuthenticatorRecord, IdentityRecord, IdentityRepository } from '../contract.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'
import { PgListRunner } from './list-runner.js'

interface IdentityRow {
  id: string
  name: string
  external_id: string | null
  is_admin: boolean
  is_default_admin: boolean
  disabled: boolean
  auth_policy_id: string
  role_attributes: string[]
  tags: Record<string, unknown>
  created_at: Date
  updated_at: Date
}

function toRecord(r: IdentityRow): IdentityRecord {
  return {
    id: r.id,
    name: r.name,
    externalId: r.external_id,
    isAdmin: r.is_admin,
    isDefaultAdmin: r.is_default_admin,
    disabled: r.disabled,
    authPolicyId: r.auth_policy_id,
    roleAttributes: r.role_attributes,
    tags: r.tags,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }
}

function values(i: IdentityRecord): unknown[] {
  return [
    i.id,
    i.name,
    i.externalId,
    i.isAdmin,
    i.isDefaultAdmin,
    i.disabled,
    i.authPolicyId,
    JSON.stringify(i.tags),
    i.updatedAt,
    JSON.stringify(i.roleAttributes),
    i.createdAt,
  ]
}

// Every column but the password hash, which only its own two methods read and write.
const COLUMNS = `id, name, external_id, is_admin, is_default_admin, disabled, auth_policy_id, tags,
  role_attributes, created_at, updated_at`
// The advisory lock key of changes to the set of enabled admins (any fixed number; "admn")."
const ADMIN_LOCK = 0x61646d6e
const UNIQUE = { identities_name_key: 'name', identities_external_id_key: 'externalId' }

/** Persistence of identities and their password hashes on PostgreSQL. */
export class PgIdentityRepository implements IdentityRepository {
  private static readonly lists = new PgListRunner<IdentityRow, IdentityRecord>(
    'identities',
    toRecord,
  )
  private static readonly attributes = new PgListRunner<{ id: string }, string>(
    '(SELECT DISTINCT jsonb_array_elements_text(role_attributes) AS id FROM identities) AS a',
    (row) => row.id,
  )

  constructor(private readonly db: Queryable) {}

  private async one(name: string, where: string, value: string) {
    try {
      const res = await this.db.query<IdentityRow>({
        name,
        text: `SELECT ${COLUMNS} FROM identities WHERE ${where} = $1`,
        values: [value],
      })
      const row = res.rows[0]
      return row ? toRecord(row) : undefined
    } catch (err) {
      throw mapPgError(err)
    }
  }

  private async changed(text: string, params: unknown[], record?: IdentityRecord) {
    try {
      return ((await this.db.query(text, params)).rowCount ?? 0) > 0
    } catch (err) {
      throw mapPgError(err, UNIQUE, record ? { ...record } : {})
    }
  }

  private async count(text: string): Promise<number> {
    try {
      return ((await this.db.query(text)).rows[0] as { n: number }).n // count(*) yields a row
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async insert(identity: IdentityRecord): Promise<void> {
    await this.changed(
      `INSERT INTO identities (id, name, external_id, is_admin, is_default_admin, disabled,
         auth_policy_id, tags, updated_at, role_attributes, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      values(identity),
      identity,
    )
  }

  update(identity: IdentityRecord): Promise<boolean> {
    return this.changed(
      `UPDATE identities SET name = $2, external_id = $3, is_admin = $4, is_default_admin = $5,
         disabled = $6, auth_policy_id = $7, tags = $8, updated_at = $9, role_attributes = $10
       WHERE id = $1`,
      values(identity).slice(0, 10),
      identity,
    )
  }

  delete(id: string): Promise<boolean> {
    return this.changed('DELETE FROM identities WHERE id = $1', [id])
  }

  get(id: string): Promise<IdentityRecord | undefined> {
    return this.one('identity-by-id', 'id', id)
  }

  getByName(name: string): Promise<IdentityRecord | undefined> {
    return this.one('identity-by-name', 'name', name)
  }

  getByExternalId(externalId: string): Promise<IdentityRecord | undefined> {
    return this.one('identity-by-external-id', 'external_id', externalId)
  }

  async passwordHash(id: string): Promise<string | null> {
    try {
      const res = await this.db.query<{ password_hash: string | null }>(
        'SELECT password_hash FROM identities WHERE id = $1',
        [id],
      )
      return res.rows[0]?.password_hash ?? null
    } catch (err) {
      throw mapPgError(err)
    }
  }

  setPasswordHash(id: string, hash: string, updatedAt: string): Promise<boolean> {
    return this.changed('UPDATE identities SET password_hash = $1, updated_at = $2 WHERE id = $3', [
      hash,
      updatedAt,
      id,
    ])
  }

  async insertCertAuthenticator(a: CertAuthenticatorRecord): Promise<void> {
    await this.changed(
      `INSERT INTO authenticators (id, identity_id, fingerprint, cert_pem, created_at)
       VALUES ($1, $2, $3, $4, $5)`,
      [a.id, a.identityId, a.fingerprint, a.certPem, a.createdAt],
    )
  }

  countEnabledAdmins(): Promise<number> {
    return this.count('SELECT count(*)::int AS n FROM identities WHERE is_admin AND NOT disabled')
  }

  /**
   * A transaction-scoped advisory lock: READ COMMITTED lets two demotions each count the other
   * admin as still enabled; serialised, the second counts after the first committed.
   */
  async lockAdmins(): Promise<void> {
    try {
      await this.db.query('SELECT pg_advisory_xact_lock($1)', [ADMIN_LOCK])
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async hasAdmin(): Promise<boolean> {
    return (await this.count('SELECT count(*)::int AS n FROM identities WHERE is_admin')) > 0
  }

  list(query: ListQuery): Promise<ListPage<IdentityRecord>> {
    return PgIdentityRepository.lists.run(this.db, query)
  }

  roleAttributes(query: ListQuery): Promise<ListPage<string>> {
    return PgIdentityRepository.attributes.run(this.db, query)
  }
}
