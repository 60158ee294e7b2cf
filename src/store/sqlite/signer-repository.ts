import {
  type ClientSignerRow,
  clientSignerRow,
  type SignerRecord,
  type TargetToken,
  type TokenRules,
} from '../contract.js'
import type { ListPage, ListQuery, ListSpec } from '../query/list-query.js'
import { certificateTaken } from '../signer-unique.js'
import type { Db } from './connection.js'
import { mapUniqueViolation } from './errors.js'
import { ListRunner } from './list-runner.js'

export type { ClientSignerRow, SignerRecord, TargetToken }

interface SignerRow {
  id: string
  name: string
  enabled: number
  issuer: string
  audience: string
  jwks_endpoint: string | null
  cert_pem: string | null
  kid: string | null
  claims_property: string
  use_external_id: number
  external_auth_url: string | null
  client_id: string | null
  scopes: string | null
  target_token: TargetToken
  enroll_to_token_enabled: number
  enroll_to_cert_enabled: number
  enroll_name_claims_selector: string
  enroll_attribute_claims_selector: string | null
  enroll_auth_policy_id: string
  common_name: string | null
  fingerprint: string | null
  not_before: string | null
  not_after: string | null
  tags: string
  token_rules: string | null
  created_at: string
  updated_at: string
}

function toRecord(r: SignerRow): SignerRecord {
  return {
    id: r.id,
    name: r.name,
    enabled: r.enabled === 1,
    issuer: r.issuer,
    audience: r.audience,
    jwksEndpoint: r.jwks_endpoint,
    certPem: r.cert_pem,
    kid: r.kid,
    claimsProperty: r.claims_property,
    useExternalId: r.use_external_id === 1,
    externalAuthUrl: r.external_auth_url,
    clientId: r.client_id,
    scopes: r.scopes === null ? null : (JSON.parse(r.scopes) as string[]), // written by toRow
    targetToken: r.target_token,
    enrollToTokenEnabled: r.enroll_to_token_enabled === 1,
    enrollToCertEnabled: r.enroll_to_cert_enabled === 1,
    enrollNameClaimsSelector: r.enroll_name_claims_selector,
    enrollAttributeClaimsSelector: r.enroll_attribute_claims_selector,
    enrollAuthPolicyId: r.enroll_auth_policy_id,
    commonName: r.common_name,
    fingerprint: r.fingerprint,
    notBefore: r.not_before,
    notAfter: r.not_after,
    tags: JSON.parse(r.tags) as Record<string, unknown>, // written by toRow
    tokenRules: r.token_rules === null ? null : (JSON.parse(r.token_rules) as TokenRules), // as tags
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

function toRow(s: SignerRecord): SignerRow {
  return {
    id: s.id,
    name: s.name,
    enabled: s.enabled ? 1 : 0,
    issuer: s.issuer,
    audience: s.audience,
    jwks_endpoint: s.jwksEndpoint,
    cert_pem: s.certPem,
    kid: s.kid,
    claims_property: s.claimsProperty,
    use_external_id: s.useExternalId ? 1 : 0,
    external_auth_url: s.externalAuthUrl,
    client_id: s.clientId,
    scopes: s.scopes === null ? null : JSON.stringify(s.scopes),
    target_token: s.targetToken,
    enroll_to_token_enabled: s.enrollToTokenEnabled ? 1 : 0,
    enroll_to_cert_enabled: s.enrollToCertEnabled ? 1 : 0,
    enroll_name_claims_selector: s.enrollNameClaimsSelector,
    enroll_attribute_claims_selector: s.enrollAttributeClaimsSelector,
    enroll_auth_policy_id: s.enrollAuthPolicyId,
    common_name: s.commonName,
    fingerprint: s.fingerprint,
    not_before: s.notBefore,
    not_after: s.notAfter,
    tags: JSON.stringify(s.tags),
    token_rules: s.tokenRules === null ? null : JSON.stringify(s.tokenRules),
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  }
}

const COLUMNS: (keyof SignerRow)[] = [
  'id',
  'name',
  'enabled',
  'issuer',
  'audience',
  'jwks_endpoint',
  'cert_pem',
  'kid',
  'claims_property',
  'use_external_id',
  'external_auth_url',
  'client_id',
  'scopes',
  'target_token',
  'enroll_to_token_enabled',
  'enroll_to_cert_enabled',
  'enroll_name_claims_selector',
  'enroll_attribute_claims_selector',
  'enroll_auth_policy_id',
  'common_name',
  'fingerprint',
  'not_before',
  'not_after',
  'tags',
  'token_rules',
  'created_at',
  'updated_at',
]
const UNIQUE_FIELDS = { 'signers.name': 'name', 'signers.issuer': 'issuer', 'signers.kid': 'kid' }

/**
 * Signers whose name or issuer contains a value, through the trigram index (FTS5 matches a quoted
 * phrase of three characters or more as a case-insensitive substring; shorter values get no help).
 */
function searchBy(column: 'name' | 'issuer') {
  return (value: string, param: (value: unknown) => string) =>
    [...value].length < 3
      ? undefined
      : `id IN (SELECT s.id FROM signer_search_fts JOIN signer_search s
            ON s.rowid = signer_search_fts.rowid WHERE signer_search_fts MATCH ${param(
              `${column} : "${value.replaceAll('"', '""')}"`,
            )})`
}

export const SIGNER_LIST_SPEC: ListSpec = {
  filterable: {
    id: { column: 'id', type: 'string' },
    name: { column: 'name', type: 'string', search: searchBy('name') },
    issuer: { column: 'issuer', type: 'string', search: searchBy('issuer') },
    audience: { column: 'audience', type: 'string' },
    kid: { column: 'kid', type: 'string' },
    enabled: { column: 'enabled', type: 'boolean' },
    useExternalId: { column: 'use_external_id', type: 'boolean' },
    claimsProperty: { column: 'claims_property', type: 'string' },
    // A certificate signer's own fields (unset on JWKS signers), as OpenZiti's list filters them.
    // commonName and enrollAttributeClaimsSelector are plain strings upstream, "" when unset, as
    // the responses show them: a filter compares what a client reads (the others are null).
    certPem: { column: 'cert_pem', type: 'string' },
    commonName: { column: "coalesce(common_name, '')", type: 'string' },
    fingerprint: { column: 'fingerprint', type: 'string' },
    notBefore: { column: 'not_before', type: 'datetime' },
    notAfter: { column: 'not_after', type: 'datetime' },
    clientId: { column: 'client_id', type: 'string' },
    targetToken: { column: 'target_token', type: 'string' },
    enrollToTokenEnabled: { column: 'enroll_to_token_enabled', type: 'boolean' },
    enrollToCertEnabled: { column: 'enroll_to_cert_enabled', type: 'boolean' },
    enrollNameClaimsSelector: { column: 'enroll_name_claims_selector', type: 'string' },
    enrollAttributeClaimsSelector: {
      column: "coalesce(enroll_attribute_claims_selector, '')",
      type: 'string',
    },
    enrollAuthPolicyId: { column: 'enroll_auth_policy_id', type: 'string' },
    createdAt: { column: 'created_at', type: 'datetime' },
    updatedAt: { column: 'updated_at', type: 'datetime' },
    tags: { column: 'tags', type: 'tags' },
  },
  // Every column OpenZiti's console sorts this list by (name, issuer, audience, enabled), and the
  // other fields that always hold a value. `kid` is left out: SQLite and PostgreSQL order its
  // nulls differently.
  sortable: {
    id: 'id',
    name: 'name',
    issuer: 'issuer',
    audience: 'audience',
    enabled: 'enabled',
    useExternalId: 'use_external_id',
    claimsProperty: 'claims_property',
    createdAt: 'created_at',
    updatedAt: 'updated_at',
  },
  idColumn: 'id',
}

/** The client list: only what it shows can be filtered or sorted on. */
export const CLIENT_SIGNER_LIST_SPEC: ListSpec = {
  filterable: {
    id: { column: 'id', type: 'string' },
    name: { column: 'name', type: 'string', search: searchBy('name') },
  },
  sortable: { id: 'id', name: 'name' },
  idColumn: 'id',
  // Anyone may ask this list, with no rate limit: a filter of a few hundred `contains` (each a
  // search of the name index on SQLite) cost tens of milliseconds of the event loop a request.
  maxComparisons: 8,
}

/** Persistence of external JWT signers. */
export class SignerRepository {
  private readonly insertStmt
  private readonly updateStmt
  private readonly deleteStmt
  private readonly getStmt
  private readonly allStmt
  private readonly byIssuerStmt
  private readonly enrollPolicyStmt
  private readonly fingerprintStmt
  private readonly lists: ListRunner<SignerRow, SignerRecord>
  private readonly clientLists: ListRunner<SignerRow, ClientSignerRow>

  constructor(db: Db) {
    const cols = COLUMNS.join(', ')
    const params = COLUMNS.map((c) => `@${c}`).join(', ')
    const sets = COLUMNS.filter((c) => c !== 'id' && c !== 'created_at')
      .map((c) => `${c} = @${c}`)
      .join(', ')
    this.insertStmt = db.prepare<SignerRow>(`INSERT INTO signers (${cols}) VALUES (${params})`)
    this.updateStmt = db.prepare<SignerRow>(`UPDATE signers SET ${sets} WHERE id = @id`)
    this.deleteStmt = db.prepare<[string]>('DELETE FROM signers WHERE id = ?')
    this.getStmt = db.prepare<[string], SignerRow>('SELECT * FROM signers WHERE id = ?')
    this.allStmt = db.prepare<[], SignerRow>('SELECT * FROM signers')
    this.byIssuerStmt = db.prepare<[string], SignerRow>('SELECT * FROM signers WHERE issuer = ?')
    this.fingerprintStmt = db.prepare<[{ fp: string; id: string }], { one: number }>(
      `SELECT 1 AS one FROM signers WHERE fingerprint = @fp AND id <> @id
         AND NOT EXISTS (SELECT 1 FROM signers WHERE id = @id AND fingerprint = @fp) LIMIT 1`,
    )
    this.enrollPolicyStmt = db.prepare<[string], { one: number }>(
      'SELECT 1 AS one FROM signers WHERE enroll_auth_policy_id = ? LIMIT 1',
    )
    this.lists = new ListRunner(db, 'signers', toRecord)
    this.clientLists = new ListRunner(db, 'signers', (r) => clientSignerRow(toRecord(r)))
  }

  /**
   * Refuses a certificate another signer has (the store's one writer makes the check safe), unless
   * this signer has it already: two signers that shared one before this check existed can still
   * be changed, or disabled.
   */
  private checkCertificate(signer: SignerRecord): void {
    const { fingerprint } = signer
    if (fingerprint !== null && this.fingerprintStmt.get({ fp: fingerprint, id: signer.id }))
      throw certificateTaken(fingerprint)
  }

  insert(signer: SignerRecord): void {
    this.checkCertificate(signer)
    try {
      this.insertStmt.run(toRow(signer))
    } catch (err) {
      throw mapUniqueViolation(err, UNIQUE_FIELDS, { ...signer })
    }
  }

  /** Returns false when no signer has that id. */
  update(signer: SignerRecord): boolean {
    this.checkCertificate(signer)
    try {
      return this.updateStmt.run(toRow(signer)).changes > 0
    } catch (err) {
      throw mapUniqueViolation(err, UNIQUE_FIELDS, { ...signer })
    }
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0
  }

  get(id: string): SignerRecord | undefined {
    const row = this.getStmt.get(id)
    return row ? toRecord(row) : undefined
  }

  /** As `get`: the unit of work already holds the database's one write lock. */
  getForUpdate(id: string): SignerRecord | undefined {
    return this.get(id)
  }

  getByIssuer(issuer: string): SignerRecord | undefined {
    const row = this.byIssuerStmt.get(issuer)
    return row ? toRecord(row) : undefined
  }

  all(): SignerRecord[] {
    return this.allStmt.all().map(toRecord)
  }

  list(query: ListQuery): ListPage<SignerRecord> {
    return this.lists.run(query)
  }

  usesEnrollPolicy(policyId: string): boolean {
    return this.enrollPolicyStmt.get(policyId) !== undefined
  }

  /** Enabled signers that clients can start a login at: only what the client list shows. */
  listForClient(query: ListQuery, withEnrollment = false): ListPage<ClientSignerRow> {
    const base = withEnrollment
      ? 'enabled = 1 AND (external_auth_url IS NOT NULL OR enroll_to_token_enabled = 1 OR enroll_to_cert_enabled = 1)'
      : 'enabled = 1 AND external_auth_url IS NOT NULL'
    return this.clientLists.run(query, base)
  }
}
