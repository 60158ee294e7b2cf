import type { AuthPolicyRecord } from '../contract.js'
import type { ListPage, ListQuery, ListSpec } from '../query/list-query.js'
import type { Db } from './connection.js'
import { mapUniqueViolation } from './errors.js'
import { ListRunner } from './list-runner.js'

export type { AuthPolicyRecord }

interface PolicyRow {
  id: string
  name: string
  cert_allowed: number
  cert_allow_expired: number
  updb_allowed: number
  updb_min_password_length: number
  updb_require_special_char: number
  updb_require_number_char: number
  updb_require_mixed_case: number
  updb_max_attempts: number
  updb_lockout_duration_minutes: number
  ext_jwt_allowed: number
  secondary_require_ext_jwt_signer: string | null
  tags: string
  created_at: string
  updated_at: string
}

function toRow(p: AuthPolicyRecord): PolicyRow {
  return {
    id: p.id,
    name: p.name,
    cert_allowed: p.certAllowed ? 1 : 0,
    cert_allow_expired: p.certAllowExpired ? 1 : 0,
    updb_allowed: p.updbAllowed ? 1 : 0,
    updb_min_password_length: p.updbMinPasswordLength,
    updb_require_special_char: p.updbRequireSpecialChar ? 1 : 0,
    updb_require_number_char: p.updbRequireNumberChar ? 1 : 0,
    updb_require_mixed_case: p.updbRequireMixedCase ? 1 : 0,
    updb_max_attempts: p.updbMaxAttempts,
    updb_lockout_duration_minutes: p.updbLockoutDurationMinutes,
    ext_jwt_allowed: p.extJwtAllowed ? 1 : 0,
    secondary_require_ext_jwt_signer: p.requireExtJwtSigner,
    tags: JSON.stringify(p.tags),
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  }
}

const COLUMNS: (keyof PolicyRow)[] = [
  'id',
  'name',
  'cert_allowed',
  'cert_allow_expired',
  'updb_allowed',
  'updb_min_password_length',
  'updb_require_special_char',
  'updb_require_number_char',
  'updb_require_mixed_case',
  'updb_max_attempts',
  'updb_lockout_duration_minutes',
  'ext_jwt_allowed',
  'secondary_require_ext_jwt_signer',
  'tags',
  'created_at',
  'updated_at',
]
const UNIQUE_FIELDS = { 'auth_policies.name': 'name' }

export const AUTH_POLICY_LIST_SPEC: ListSpec = {
  filterable: {
    id: { column: 'id', type: 'string' },
    name: { column: 'name', type: 'string' },
    createdAt: { column: 'created_at', type: 'datetime' },
    updatedAt: { column: 'updated_at', type: 'datetime' },
    tags: { column: 'tags', type: 'tags' },
    'primary.cert.allowed': { column: 'cert_allowed', type: 'boolean' },
    'primary.updb.allowed': { column: 'updb_allowed', type: 'boolean' },
    'primary.extJwt.allowed': { column: 'ext_jwt_allowed', type: 'boolean' },
  },
  // OpenZiti's console sorts this list by name and by each primary method's `allowed`.
  sortable: {
    id: 'id',
    name: 'name',
    'primary.cert.allowed': 'cert_allowed',
    'primary.updb.allowed': 'updb_allowed',
    'primary.extJwt.allowed': 'ext_jwt_allowed',
    createdAt: 'created_at',
    updatedAt: 'updated_at',
  },
  idColumn: 'id',
}

/** Persistence of authentication policies and their allowed-signer lists. */
export class AuthPolicyRepository {
  private readonly insertStmt
  private readonly updateStmt
  private readonly deleteStmt
  private readonly getStmt
  private readonly signersStmt
  private readonly clearSignersStmt
  private readonly addSignerStmt
  private readonly primaryRefStmt
  private readonly secondaryRefStmt
  private readonly identityRefStmt
  private readonly lists: ListRunner<PolicyRow, PolicyRow>

  constructor(db: Db) {
    const sets = COLUMNS.filter((c) => c !== 'id' && c !== 'created_at')
      .map((c) => `${c} = @${c}`)
      .join(', ')
    this.insertStmt = db.prepare<PolicyRow>(
      `INSERT INTO auth_policies (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
    )
    this.updateStmt = db.prepare<PolicyRow>(`UPDATE auth_policies SET ${sets} WHERE id = @id`)
    this.deleteStmt = db.prepare<[string]>('DELETE FROM auth_policies WHERE id = ?')
    this.getStmt = db.prepare<[string], PolicyRow>('SELECT * FROM auth_policies WHERE id = ?')
    this.signersStmt = db.prepare<[string], { signer_id: string }>(
      'SELECT signer_id FROM auth_policy_signers WHERE policy_id = ? ORDER BY position',
    )
    this.clearSignersStmt = db.prepare<[string]>(
      'DELETE FROM auth_policy_signers WHERE policy_id = ?',
    )
    this.addSignerStmt = db.prepare<[string, string, number]>(
      'INSERT OR IGNORE INTO auth_policy_signers (policy_id, signer_id, position) VALUES (?, ?, ?)',
    )
    this.primaryRefStmt = db.prepare<[string], { policy_id: string }>(
      'SELECT policy_id FROM auth_policy_signers WHERE signer_id = ? LIMIT 1',
    )
    this.secondaryRefStmt = db.prepare<[string], { id: string }>(
      'SELECT id FROM auth_policies WHERE secondary_require_ext_jwt_signer = ? LIMIT 1',
    )
    this.identityRefStmt = db.prepare<[string], { id: string }>(
      'SELECT id FROM identities WHERE auth_policy_id = ? LIMIT 1',
    )
    this.lists = new ListRunner(db, 'auth_policies', (row: PolicyRow) => row)
  }

  private toRecord(r: PolicyRow): AuthPolicyRecord {
    return {
      id: r.id,
      name: r.name,
      certAllowed: r.cert_allowed === 1,
      certAllowExpired: r.cert_allow_expired === 1,
      updbAllowed: r.updb_allowed === 1,
      updbMinPasswordLength: r.updb_min_password_length,
      updbRequireSpecialChar: r.updb_require_special_char === 1,
      updbRequireNumberChar: r.updb_require_number_char === 1,
      updbRequireMixedCase: r.updb_require_mixed_case === 1,
      updbMaxAttempts: r.updb_max_attempts,
      updbLockoutDurationMinutes: r.updb_lockout_duration_minutes,
      extJwtAllowed: r.ext_jwt_allowed === 1,
      allowedSigners: this.signersStmt.all(r.id).map((s) => s.signer_id),
      requireExtJwtSigner: r.secondary_require_ext_jwt_signer,
      tags: JSON.parse(r.tags) as Record<string, unknown>, // written by toRow
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }
  }

  private writeSigners(p: AuthPolicyRecord): void {
    this.clearSignersStmt.run(p.id)
    p.allowedSigners.forEach((signerId, i) => {
      this.addSignerStmt.run(p.id, signerId, i)
    })
  }

  /** Call inside a transaction: writes the policy row and its signer list. */
  insert(p: AuthPolicyRecord): void {
    try {
      this.insertStmt.run(toRow(p))
    } catch (err) {
      throw mapUniqueViolation(err, UNIQUE_FIELDS, { ...p })
    }
    this.writeSigners(p)
  }

  /** Call inside a transaction. Returns false when no policy has that id. */
  update(p: AuthPolicyRecord): boolean {
    try {
      if (this.updateStmt.run(toRow(p)).changes === 0) return false
    } catch (err) {
      throw mapUniqueViolation(err, UNIQUE_FIELDS, { ...p })
    }
    this.writeSigners(p)
    return true
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0
  }

  get(id: string): AuthPolicyRecord | undefined {
    const row = this.getStmt.get(id)
    return row ? this.toRecord(row) : undefined
  }

  /** As `get`: the unit of work already holds the database's one write lock. */
  getForUpdate(id: string): AuthPolicyRecord | undefined {
    return this.get(id)
  }

  list(query: ListQuery): ListPage<AuthPolicyRecord> {
    const page = this.lists.run(query)
    return { ...page, items: page.items.map((row) => this.toRecord(row)) }
  }

  /** The policy field that references a signer, if any policy does. */
  signerReference(signerId: string): string | undefined {
    if (this.primaryRefStmt.get(signerId)) return 'primary.extJwt.allowedSigners'
    if (this.secondaryRefStmt.get(signerId)) return 'secondary.requireExtJwtSigner'
    return undefined
  }

  isUsedByIdentity(policyId: string): boolean {
    return this.identityRefStmt.get(policyId) !== undefined
  }
}
