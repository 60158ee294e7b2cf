import {
  type ClientSignerRow,
  clientSignerRow,
  type SignerRecord,
  type SignerRepository,
  type TargetToken,
  type TokenRules,
} from '../contract.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import { certificateTaken } from '../signer-unique.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'
import { PgListRunner } from './list-runner.js'

interface SignerRow {
  id: string
  name: string
  enabled: boolean
  issuer: string
  audience: string
  jwks_endpoint: string | null
  cert_pem: string | null
  kid: string | null
  claims_property: string
  use_external_id: boolean
  external_auth_url: string | null
  client_id: string | null
  scopes: string[] | null
  target_token: TargetToken
  enroll_to_token_enabled: boolean
  enroll_to_cert_enabled: boolean
  enroll_name_claims_selector: string
  enroll_attribute_claims_selector: string | null
  enroll_auth_policy_id: string
  common_name: string | null
  fingerprint: string | null
  not_before: Date | null
  not_after: Date | null
  tags: Record<string, unknown>
  token_rules: TokenRules | null
  created_at: Date
  updated_at: Date
}

function toRecord(r: SignerRow): SignerRecord {
  return {
    id: r.id,
    name: r.name,
    enabled: r.enabled,
    issuer: r.issuer,
    audience: r.audience,
    jwksEndpoint: r.jwks_endpoint,
    certPem: r.cert_pem,
    kid: r.kid,
    claimsProperty: r.claims_property,
    useExternalId: r.use_external_id,
    externalAuthUrl: r.external_auth_url,
    clientId: r.client_id,
    scopes: r.scopes,
    targetToken: r.target_token,
    enrollToTokenEnabled: r.enroll_to_token_enabled,
    enrollToCertEnabled: r.enroll_to_cert_enabled,
    enrollNameClaimsSelector: r.enroll_name_claims_selector,
    enrollAttributeClaimsSelector: r.enroll_attribute_claims_selector,
    enrollAuthPolicyId: r.enroll_auth_policy_id,
    commonName: r.common_name,
    fingerprint: r.fingerprint,
    notBefore: iso(r.not_before),
    notAfter: iso(r.not_after),
    tags: r.tags,
    tokenRules: r.token_rules,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }
}

function values(s: SignerRecord): unknown[] {
  return [
    s.id,
    s.name,
    s.enabled,
    s.issuer,
    s.audience,
    s.jwksEndpoint,
    s.certPem,
    s.kid,
    s.claimsProperty,
    s.useExternalId,
    s.externalAuthUrl,
    s.clientId,
    s.scopes === null ? null : JSON.stringify(s.scopes),
    s.targetToken,
    s.commonName,
    s.fingerprint,
    s.notBefore,
    s.notAfter,
    JSON.stringify(s.tags),
    s.createdAt,
    s.updatedAt,
    s.enrollToTokenEnabled,
    s.enrollToCertEnabled,
    s.enrollNameClaimsSelector,
    s.enrollAttributeClaimsSelector,
    s.enrollAuthPolicyId,
    s.tokenRules === null ? null : JSON.stringify(s.tokenRules),
  ]
}

/**
 * Every column this release reads, named: a prepared statement of `SELECT *` would fail on an
 * instance still running while a later release's migration adds a column ('cached plan must not
 * change result type', until it reconnects), losing requests during a rolling upgrade.
 */
const COLUMNS = `id, name, enabled, issuer, audience, jwks_endpoint, cert_pem, kid, claims_property,
  use_external_id, external_auth_url, client_id, scopes, target_token, common_name, fingerprint,
  not_before, not_after, tags, created_at, updated_at, enroll_to_token_enabled,
  enroll_to_cert_enabled, enroll_name_claims_selector, enroll_attribute_claims_selector,
  enroll_auth_policy_id, token_rules`
const INSERT = `INSERT INTO signers (${COLUMNS}) VALUES
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
   $22, $23, $24, $25, $26, $27)`
const UPDATE = `UPDATE signers SET name = $2, enabled = $3, issuer = $4, audience = $5,
  jwks_endpoint = $6, cert_pem = $7, kid = $8, claims_property = $9, use_external_id = $10,
  external_auth_url = $11, client_id = $12, scopes = $13, target_token = $14, common_name = $15,
  fingerprint = $16, not_before = $17, not_after = $18, tags = $19, updated_at = $20,
  enroll_to_token_enabled = $21, enroll_to_cert_enabled = $22, enroll_name_claims_selector = $23,
  enroll_attribute_claims_selector = $24, enroll_auth_policy_id = $25, token_rules = $26
  WHERE id = $1`
const UNIQUE = { signers_name_key: 'name', signers_issuer_key: 'issuer', signers_kid: 'kid' }
/** The advisory lock of certificate signer writes: 0x7369676e, "sign" (012's is "sess"). */
const CERTIFICATE_LOCK = 1936287598

/** Persistence of external JWT signers on PostgreSQL. */
export class PgSignerRepository implements SignerRepository {
  private static readonly lists = new PgListRunner<SignerRow, SignerRecord>('signers', toRecord)
  private static readonly clientLists = new PgListRunner<SignerRow, ClientSignerRow>(
    'signers',
    (r) => clientSignerRow(toRecord(r)),
  )

  constructor(private readonly db: Queryable) {}

  private async rows(text: string, params: unknown[], name?: string): Promise<SignerRow[]> {
    try {
      return (await this.db.query<SignerRow>(name ? { name, text, values: params } : text, params))
        .rows
    } catch (err) {
      throw mapPgError(err)
    }
  }

  /**
   * Counts every signer write, in the writer's transaction. This release keeps its signer lists
   * by the change notifications and no longer reads the counter; instances of earlier releases
   * still compare it on every list request, so it is kept current while they may run beside this
   * one (a rolling upgrade).
   */
  private async bump(): Promise<void> {
    await this.db.query('UPDATE signer_list_version SET version = version + 1')
  }

  /**
   * Refuses a certificate another signer has, unless this signer has it already (two that shared
   * one before this check existed can still be changed). Certificate writes take one lock of their
   * own first, held to COMMIT, so the read that follows sees every other one committed (READ
   * COMMITTED reads each statement anew). Only they take it, and nothing else before it, so it
   * waits in no cycle with the rows and the counter other writes lock.
   */
  private async checkCertificate(signer: SignerRecord): Promise<void> {
    const { fingerprint } = signer
    if (fingerprint === null) return
    await this.db.query('SELECT pg_advisory_xact_lock($1, 0)', [CERTIFICATE_LOCK])
    const taken = await this.db.query({
      name: 'signer-fingerprint-taken',
      text: `SELECT 1 FROM signers WHERE fingerprint = $1 AND id <> $2
        AND NOT EXISTS (SELECT 1 FROM signers WHERE id = $2 AND fingerprint = $1) LIMIT 1`,
      values: [fingerprint, signer.id],
    })
    if ((taken.rowCount ?? 0) > 0) throw certificateTaken(fingerprint)
  }

  async insert(signer: SignerRecord): Promise<void> {
    try {
      await this.checkCertificate(signer)
      await this.db.query(INSERT, values(signer))
      await this.bump()
    } catch (err) {
      throw mapPgError(err, UNIQUE, { ...signer })
    }
  }

  async update(signer: SignerRecord): Promise<boolean> {
    try {
      await this.checkCertificate(signer)
      const params = values(signer).filter((_, i) => i !== 19) // every column but created_at
      const changed = ((await this.db.query(UPDATE, params)).rowCount ?? 0) > 0
      if (changed) await this.bump()
      return changed
    } catch (err) {
      throw mapPgError(err, UNIQUE, { ...signer })
    }
  }

  async delete(id: string): Promise<boolean> {
    try {
      const deleted =
        ((await this.db.query('DELETE FROM signers WHERE id = $1', [id])).rowCount ?? 0) > 0
      if (deleted) await this.bump()
      return deleted
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async get(id: string): Promise<SignerRecord | undefined> {
    const sql = `SELECT ${COLUMNS} FROM signers WHERE id = $1`
    const [row] = await this.rows(sql, [id], 'signer-by-id')
    return row ? toRecord(row) : undefined
  }

  async getForUpdate(id: string): Promise<SignerRecord | undefined> {
    const sql = `SELECT ${COLUMNS} FROM signers WHERE id = $1 FOR NO KEY UPDATE`
    const [row] = await this.rows(sql, [id], 'signer-by-id-for-update')
    return row ? toRecord(row) : undefined
  }

  async getByIssuer(issuer: string): Promise<SignerRecord | undefined> {
    const sql = `SELECT ${COLUMNS} FROM signers WHERE issuer = $1`
    const [row] = await this.rows(sql, [issuer], 'signer-by-issuer')
    return row ? toRecord(row) : undefined
  }

  async all(): Promise<SignerRecord[]> {
    return (await this.rows(`SELECT ${COLUMNS} FROM signers`, [])).map(toRecord)
  }

  list(query: ListQuery): Promise<ListPage<SignerRecord>> {
    return PgSignerRepository.lists.run(this.db, query)
  }

  async usesEnrollPolicy(policyId: string): Promise<boolean> {
    const sql = 'SELECT id FROM signers WHERE enroll_auth_policy_id = $1 LIMIT 1'
    return (await this.rows(sql, [policyId])).length > 0
  }

  async listForClient(
    query: ListQuery,
    withEnrollment = false,
  ): Promise<ListPage<ClientSignerRow>> {
    const base = withEnrollment
      ? 'enabled AND (external_auth_url IS NOT NULL OR enroll_to_token_enabled OR enroll_to_cert_enabled)'
      : 'enabled AND external_auth_url IS NOT NULL'
    return PgSignerRepository.clientLists.run(this.db, query, base)
  }
}
