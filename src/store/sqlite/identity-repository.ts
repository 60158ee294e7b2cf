import type { CertAuthenticatorRecord, IdentityRecord } from '../contract.js'
import type { ListPage, ListQuery, ListSpec } from '../query/list-query.js'
import type { Db } from './connection.js'
import { mapUniqueViolation } from './errors.js'
import { ListRunner } from './list-runner.js'

export type { IdentityRecord }

interface IdentityRow {
  id: string
  name: string
  external_id: string | null
  is_admin: number
  is_default_admin: number
  disabled: number
  auth_policy_id: string
  role_attributes: string
  password_hash: string | null
  tags: string
  created_at: string
  updated_at: string
}

type WriteRow = Omit<IdentityRow, 'password_hash'>

function toRecord(r: IdentityRow): IdentityRecord {
  return {
    id: r.id,
    name: r.name,
    externalId: r.external_id,
    isAdmin: r.is_admin === 1,
    isDefaultAdmin: r.is_default_admin === 1,
    disabled: r.disabled === 1,
    authPolicyId: r.auth_policy_id,
    roleAttributes: JSON.parse(r.role_attributes) as string[], // written by toRow
    tags: JSON.parse(r.tags) as Record<string, unknown>, // written by toRow
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

function toRow(i: IdentityRecord): WriteRow {
  return {
    id: i.id,
    name: i.name,
    external_id: i.externalId,
    is_admin: i.isAdmin ? 1 : 0,
    is_default_admin: i.isDefaultAdmin ? 1 : 0,
    disabled: i.disabled ? 1 : 0,
    auth_policy_id: i.authPolicyId,
    role_attributes: JSON.stringify(i.roleAttributes),
    tags: JSON.stringify(i.tags),
    created_at: i.createdAt,
    updated_at: i.updatedAt,
  }
}

const UNIQUE_FIELDS = { 'identities.name': 'name', 'identities.external_id': 'externalId' }

export const IDENTITY_LIST_SPEC: ListSpec = {
  filterable: {
    id: { column: 'id', type: 'string' },
    name: { column: 'name', type: 'string' },
    externalId: { column: 'external_id', type: 'string' },
    isAdmin: { column: 'is_admin', type: 'boolean' },
    disabled: { column: 'disabled', type: 'boolean' },
    authPolicyId: { column: 'auth_policy_id', type: 'string' },
    createdAt: { column: 'created_at', type: 'datetime' },
    updatedAt: { column: 'updated_at', type: 'datetime' },
    tags: { column: 'tags', type: 'tags' },
  },
  // OpenZiti's console sorts this list by name, type, isAdmin and createdAt. Every identity is of
  // the type Default, so a sort by type leaves the order to the id (an expression both stores
  // accept in ORDER BY, where a bare constant would be read as a column's position or refused).
  sortable: {
    id: 'id',
    name: 'name',
    type: "lower('Default')",
    isAdmin: 'is_admin',
    disabled: 'disabled',
    createdAt: 'created_at',
    updatedAt: 'updated_at',
  },
  idColumn: 'id',
}

/** The distinct role attributes of identities, listed as OpenZiti lists them (by `id`). */
export const ROLE_ATTRIBUTE_LIST_SPEC: ListSpec = {
  filterable: { id: { column: 'id', type: 'string' } },
  sortable: { id: 'id' },
  idColumn: 'id',
}

/** Persistence of identities and their password hashes. */
export class IdentityRepository {
  private readonly insertStmt
  private readonly updateStmt
  private readonly deleteStmt
  private readonly getStmt
  private readonly byNameStmt
  private readonly byExternalIdStmt
  private readonly passwordStmt
  private readonly setPasswordStmt
  private readonly enabledAdminsStmt
  private readonly anyAdminStmt
  private readonly lists: ListRunner<IdentityRow, IdentityRecord>
  private readonly attributes: ListRunner<{ id: string }, string>
  private readonly insertAuthenticatorStmt

  constructor(db: Db) {
    this.insertStmt = db.prepare<WriteRow>(
      `INSERT INTO identities (id, name, external_id, is_admin, is_default_admin, disabled,
         auth_policy_id, role_attributes, tags, created_at, updated_at)
       VALUES (@id, @name, @external_id, @is_admin, @is_default_admin, @disabled,
         @auth_policy_id, @role_attributes, @tags, @created_at, @updated_at)`,
    )
    this.updateStmt = db.prepare<WriteRow>(
      `UPDATE identities SET name = @name, external_id = @external_id, is_admin = @is_admin,
         is_default_admin = @is_default_admin, disabled = @disabled,
         auth_policy_id = @auth_policy_id, role_attributes = @role_attributes, tags = @tags,
         updated_at = @updated_at
       WHERE id = @id`,
    )
    this.deleteStmt = db.prepare<[string]>('DELETE FROM identities WHERE id = ?')
    this.getStmt = db.prepare<[string], IdentityRow>('SELECT * FROM identities WHERE id = ?')
    this.byNameStmt = db.prepare<[string], IdentityRow>('SELECT * FROM identities WHERE name = ?')
    this.byExternalIdStmt = db.prepare<[string], IdentityRow>(
      'SELECT * FROM identities WHERE external_id = ?',
    )
    this.passwordStmt = db.prepare<[string], { password_hash: string | null }>(
      'SELECT password_hash FROM identities WHERE id = ?',
    )
    this.setPasswordStmt = db.prepare<[string, string, string]>(
      'UPDATE identities SET password_hash = ?, updated_at = ? WHERE id = ?',
    )
    this.enabledAdminsStmt = db.prepare<[], { n: number }>(
      'SELECT count(*) AS n FROM identities WHERE is_admin = 1 AND disabled = 0',
    )
    this.anyAdminStmt = db.prepare<[], { n: number }>(
      'SELECT count(*) AS n FROM identities WHERE is_admin = 1',
    )
    this.lists = new ListRunner(db, 'identities', toRecord)
    this.attributes = new ListRunner(
      db,
      `(SELECT DISTINCT a.value AS id FROM identities, json_each(identities.role_attributes) AS a)`,
      (row) => row.id,
    )
    this.insertAuthenticatorStmt = db.prepare<CertAuthenticatorRecord>(
      `INSERT INTO authenticators (id, identity_id, fingerprint, cert_pem, created_at)
       VALUES (@id, @identityId, @fingerprint, @certPem, @createdAt)`,
    )
  }

  insertCertAuthenticator(authenticator: CertAuthenticatorRecord): void {
    this.insertAuthenticatorStmt.run(authenticator)
  }

  insert(identity: IdentityRecord): void {
    try {
      this.insertStmt.run(toRow(identity))
    } catch (err) {
      throw mapUniqueViolation(err, UNIQUE_FIELDS, { ...identity })
    }
  }

  update(identity: IdentityRecord): boolean {
    try {
      return this.updateStmt.run(toRow(identity)).changes > 0
    } catch (err) {
      throw mapUniqueViolation(err, UNIQUE_FIELDS, { ...identity })
    }
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0
  }

  get(id: string): IdentityRecord | undefined {
    const row = this.getStmt.get(id)
    return row ? toRecord(row) : undefined
  }

  getByName(name: string): IdentityRecord | undefined {
    const row = this.byNameStmt.get(name)
    return row ? toRecord(row) : undefined
  }

  getByExternalId(externalId: string): IdentityRecord | undefined {
    const row = this.byExternalIdStmt.get(externalId)
    return row ? toRecord(row) : undefined
  }

  passwordHash(id: string): string | null {
    return this.passwordStmt.get(id)?.password_hash ?? null
  }

  setPasswordHash(id: string, hash: string, updatedAt: string): boolean {
    return this.setPasswordStmt.run(hash, updatedAt, id).changes > 0
  }

  countEnabledAdmins(): number {
    return (this.enabledAdminsStmt.get() as { n: number }).n // count(*) always yields a row
  }

  /** Nothing to take: one unit of work runs at a time on SQLite. */
  lockAdmins(): void {}

  hasAdmin(): boolean {
    return (this.anyAdminStmt.get() as { n: number }).n > 0 // count(*) always yields a row
  }

  list(query: ListQuery): ListPage<IdentityRecord> {
    return this.lists.run(query)
  }

  roleAttributes(query: ListQuery): ListPage<string> {
    return this.attributes.run(query)
  }
}
