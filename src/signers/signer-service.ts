import { type AuditContext, AuditService } from '../audit/audit-service.js'
import { bodyFields, differingFields } from '../audit/changed-fields.js'
import type { ChangeBus } from '../changes.js'
import { AppError, fieldError } from '../errors.js'
import { newId } from '../ids.js'
import { notFound } from '../resources.js'
import type { SignerRecord, Store, UnitOfWork } from '../store/contract.js'
import { type ListParams, parseListQuery } from '../store/query/list-query.js'
import { CLIENT_SIGNER_LIST_SPEC, SIGNER_LIST_SPEC } from '../store/sqlite/signer-repository.js'
import type { SignerCertificate } from './certificate.js'
import {
  applySignerPatch,
  checkSigner,
  fromInput,
  type SignerInput,
  type SignerPatch,
  type WritableSigner,
} from './signer-rules.js'

export type { ClientSignerRow } from '../store/contract.js'
export type { SignerRecord }

export interface SignerServiceOptions {
  store: Store
  changes: ChangeBus
  clock: () => Date
  /** Default: a trail that is stored but not logged (benchmarks and unit tests). */
  audit?: AuditService | undefined
  /** Why a jwksEndpoint may not be fetched from (the SSRF policy), or undefined. */
  jwksUrlCheck?: (url: string) => string | undefined
}

const ENTITY = (entityId: string) => ({ entityType: 'external-jwt-signers' as const, entityId })

/** Management of external JWT signers: the rules of the seed on top of the store. */
export class SignerService {
  readonly filterableFields = Object.keys(SIGNER_LIST_SPEC.filterable)
  /** Those of the unauthenticated list. */
  readonly clientFilterableFields = Object.keys(CLIENT_SIGNER_LIST_SPEC.filterable)

  private readonly options: SignerServiceOptions & { audit: AuditService }

  private readonly listListeners: (() => void)[] = []

  constructor(options: SignerServiceOptions) {
    this.options = {
      ...options,
      audit: options.audit ?? AuditService.unlogged(options.store, options.clock),
    }
    options.changes.on((event) => {
      if (event.entity === 'signer') for (const l of this.listListeners) l()
    })
    options.store.onFeed((event) => {
      if (event.type !== 'change') for (const l of this.listListeners) l()
    })
  }

  /** Called whenever a signer changed (here or on another instance) or changes may be missed. */
  onListChange(listener: () => void): void {
    this.listListeners.push(listener)
  }

  /**
   * The version signer lists are kept for, or undefined while changes may have been missed (no
   * list may then be served from memory). Every change, made here or heard from another instance
   * through the store's notifications, passes through `onListChange`, which empties what was kept
   * for the version; so the version itself never needs to change, nor to be read from the store.
   * On SQLite one process owns the store and hears every change; on PostgreSQL kept lists are
   * current as long as the notification connection listens (a change through another instance
   * shows here once its notification arrives, within milliseconds; while the connection is down,
   * lists are read). Known without a promise, so a kept page can be answered synchronously.
   */
  listVersion(): string | undefined {
    return this.options.store.stale ? undefined : ''
  }

  private build(
    fields: WritableSigner,
    base: Pick<SignerRecord, 'id' | 'createdAt'>,
    now: string,
  ): SignerRecord {
    const cert: SignerCertificate | undefined = checkSigner(fields)
    const refused = fields.jwksEndpoint && this.options.jwksUrlCheck?.(fields.jwksEndpoint)
    if (refused) throw fieldError('INVALID_FIELD', 'jwksEndpoint', refused, fields.jwksEndpoint)
    return {
      ...fields,
      ...base,
      commonName: cert?.commonName ?? null,
      fingerprint: cert?.fingerprint ?? null,
      notBefore: cert?.notBefore ?? null,
      notAfter: cert?.notAfter ?? null,
      updatedAt: now,
    }
  }

  /** The enrollment policy exists and allows the primary login each enabled enrollment makes. */
  private async checkEnrollPolicy(tx: UnitOfWork, s: SignerRecord): Promise<void> {
    const field = 'enrollAuthPolicyId'
    const policy = await tx.policies.get(s.enrollAuthPolicyId)
    if (!policy) {
      throw fieldError('COULD_NOT_VALIDATE', field, 'no policy has this id', s.enrollAuthPolicyId)
    }
    if (s.enrollToTokenEnabled && !policy.extJwtAllowed) {
      const reason = 'the policy must allow primary ext-jwt login with enrollToTokenEnabled'
      throw fieldError('COULD_NOT_VALIDATE', field, reason, s.enrollAuthPolicyId)
    }
    if (s.enrollToCertEnabled && !policy.certAllowed) {
      const reason = 'the policy must allow primary certificate login with enrollToCertEnabled'
      throw fieldError('COULD_NOT_VALIDATE', field, reason, s.enrollAuthPolicyId)
    }
  }

  private emit(op: 'upsert' | 'delete', record: SignerRecord): void {
    this.options.changes.emit({
      entity: 'signer',
      op,
      id: record.id,
      remote: false,
      record,
    })
  }

  async create(input: SignerInput, ctx?: AuditContext): Promise<SignerRecord> {
    const { audit } = this.options
    const now = this.options.clock().toISOString()
    const signer = this.build(fromInput(input), { id: newId(), createdAt: now }, now)
    const event = await this.options.store.transaction(async (tx) => {
      await this.checkEnrollPolicy(tx, signer)
      await tx.signers.insert(signer)
      await tx.publish({ entity: 'signer', op: 'upsert', id: signer.id })
      const changedFields = bodyFields(input, [], true)
      return audit.record(tx, ctx, { action: 'create', ...ENTITY(signer.id), changedFields })
    })
    audit.logged(event)
    this.emit('upsert', signer)
    return signer
  }

  async get(id: string): Promise<SignerRecord> {
    const signer = await this.options.store.repos.signers.get(id)
    if (!signer) throw notFound('signer', id)
    return signer
  }

  list(params: ListParams) {
    return this.options.store.repos.signers.list(parseListQuery(params, SIGNER_LIST_SPEC))
  }

  /**
   * The client list. `withEnrollment` adds signers that allow enrollment (OpenZiti's list);
   * `byDefault` is its page size without a `limit` (OpenZiti's 10 unless given).
   */
  listForClient(
    params: ListParams,
    { withEnrollment = false, byDefault }: { withEnrollment?: boolean; byDefault?: 'none' } = {},
  ) {
    const query = parseListQuery(params, CLIENT_SIGNER_LIST_SPEC, byDefault)
    return this.options.store.repos.signers.listForClient(query, withEnrollment)
  }

  /** PUT: omitted optional fields reset to their defaults, except token rules, which stay. */
  replace(id: string, input: SignerInput, ctx?: AuditContext): Promise<SignerRecord> {
    return this.update(
      id,
      (current) =>
        fromInput(
          input.tokenRules === undefined ? { ...input, tokenRules: current.tokenRules } : input,
        ),
      ctx,
    )
  }

  /** PATCH: only the keys present change. */
  patch(id: string, patch: SignerPatch, ctx?: AuditContext): Promise<SignerRecord> {
    return this.update(id, (current) => applySignerPatch(current, patch), ctx, bodyFields(patch))
  }

  /** `patched`: the PATCH body's keys; a PUT records the fields whose stored value changed. */
  private async update(
    id: string,
    change: (current: WritableSigner) => WritableSigner,
    ctx: AuditContext | undefined,
    patched?: string[],
  ): Promise<SignerRecord> {
    const { audit } = this.options
    const [signer, event] = await this.options.store.transaction(async (tx) => {
      const current = await tx.signers.getForUpdate(id)
      if (!current) throw notFound('signer', id)
      const now = this.options.clock().toISOString()
      const next = this.build(change(current), { id, createdAt: current.createdAt }, now)
      await this.checkEnrollPolicy(tx, next)
      if (!(await tx.signers.update(next))) throw notFound('signer', id)
      await tx.publish({ entity: 'signer', op: 'upsert', id })
      const event = await audit.record(tx, ctx, {
        action: patched ? 'patch' : 'update',
        ...ENTITY(id),
        changedFields: patched ?? differingFields(current, next),
      })
      return [next, event] as const
    })
    audit.logged(event)
    this.emit('upsert', signer)
    return signer
  }

  async delete(id: string, ctx?: AuditContext): Promise<void> {
    const { audit } = this.options
    const [signer, event] = await this.options.store.transaction(async (tx) => {
      const current = await tx.signers.get(id)
      if (!current) throw notFound('signer', id)
      const field = await tx.policies.signerReference(id)
      if (field !== undefined) {
        throw new AppError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          cause: { field, reason: 'an authentication policy references this signer', value: id },
        })
      }
      await tx.signers.delete(id)
      await tx.publish({ entity: 'signer', op: 'delete', id })
      return [current, await audit.record(tx, ctx, { action: 'delete', ...ENTITY(id) })] as const
    })
    audit.logged(event)
    this.emit('delete', signer)
  }
}
