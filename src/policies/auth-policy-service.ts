import type { AuditContext, AuditService } from '../audit/audit-service.js'
import { bodyFields, differingFields } from '../audit/changed-fields.js'
import type { ChangeBus } from '../changes.js'
import { AppError, fieldError } from '../errors.js'
import { newId } from '../ids.js'
import { LookupCache } from '../lookup-cache.js'
import { applyPatch, notFound } from '../resources.js'
import type { AuthPolicyRecord, IdentityRecord, Store, UnitOfWork } from '../store/contract.js'
import { type ListParams, parseListQuery } from '../store/query/list-query.js'
import { AUTH_POLICY_LIST_SPEC } from '../store/sqlite/auth-policy-repository.js'

export type { AuthPolicyRecord }

/** Passwords are never shorter than this, whatever a policy says. */
export const MIN_PASSWORD_LENGTH = 12

/** A policy as the API writes it (create/PUT); PATCH uses the same shape with every key optional. */
export interface AuthPolicyInput {
  name: string
  primary: {
    cert: { allowed: boolean; allowExpiredCerts?: boolean | undefined }
    updb: {
      allowed: boolean
      minPasswordLength?: number | undefined
      requireSpecialChar?: boolean | undefined
      requireNumberChar?: boolean | undefined
      requireMixedCase?: boolean | undefined
      maxAttempts?: number | undefined
      lockoutDurationMinutes?: number | undefined
    }
    extJwt: { allowed: boolean; allowedSigners?: string[] | null | undefined }
  }
  secondary: { requireTotp?: boolean | undefined; requireExtJwtSigner?: string | null | undefined }
  tags?: Record<string, unknown> | null | undefined
}

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> | null : T[K] }
export type AuthPolicyPatch = DeepPartial<AuthPolicyInput>

type Fields = Omit<AuthPolicyRecord, 'id' | 'createdAt' | 'updatedAt'>

function fromInput(input: AuthPolicyInput): Fields {
  const { cert, updb, extJwt } = input.primary
  return {
    name: input.name,
    certAllowed: cert.allowed,
    certAllowExpired: cert.allowExpiredCerts ?? false,
    updbAllowed: updb.allowed,
    updbMinPasswordLength: Math.max(MIN_PASSWORD_LENGTH, updb.minPasswordLength ?? 0),
    updbRequireSpecialChar: updb.requireSpecialChar ?? false,
    updbRequireNumberChar: updb.requireNumberChar ?? false,
    updbRequireMixedCase: updb.requireMixedCase ?? false,
    updbMaxAttempts: updb.maxAttempts ?? 0,
    updbLockoutDurationMinutes: updb.lockoutDurationMinutes ?? 0,
    extJwtAllowed: extJwt.allowed,
    allowedSigners: [...new Set(extJwt.allowedSigners ?? [])],
    requireExtJwtSigner: input.secondary.requireExtJwtSigner || null,
    tags: input.tags ?? {},
  }
}

/** Back to the input shape, so a PATCH can merge onto it at any depth. */
function toInput(p: AuthPolicyRecord): AuthPolicyInput {
  return {
    name: p.name,
    primary: {
      cert: { allowed: p.certAllowed, allowExpiredCerts: p.certAllowExpired },
      updb: {
        allowed: p.updbAllowed,
        minPasswordLength: p.updbMinPasswordLength,
        requireSpecialChar: p.updbRequireSpecialChar,
        requireNumberChar: p.updbRequireNumberChar,
        requireMixedCase: p.updbRequireMixedCase,
        maxAttempts: p.updbMaxAttempts,
        lockoutDurationMinutes: p.updbLockoutDurationMinutes,
      },
      extJwt: { allowed: p.extJwtAllowed, allowedSigners: p.allowedSigners },
    },
    secondary: { requireTotp: false, requireExtJwtSigner: p.requireExtJwtSigner },
    tags: p.tags,
  }
}

const ENTITY = (entityId: string) => ({ entityType: 'auth-policies' as const, entityId })
/** Audit events name the fields inside these objects by dotted paths. */
const NESTED = ['primary', 'secondary']

/** Primary authentication methods a policy can allow. */
export type PrimaryMethod = 'updb' | 'ext-jwt'

/** Authentication policies: which primary methods an identity may use, and its secondary factor. */
export class AuthPolicyService {
  readonly filterableFields = Object.keys(AUTH_POLICY_LIST_SPEC.filterable)
  /** Policies are read on every authenticated request: kept in memory, dropped on any change. */
  private readonly cache = new LookupCache<AuthPolicyRecord | undefined>()

  constructor(
    private readonly store: Store,
    private readonly changes: ChangeBus,
    private readonly clock: () => Date,
    private readonly audit: AuditService,
  ) {
    changes.on((event) => {
      if (event.entity === 'policy') this.cache.clear()
    })
    store.onFeed(() => this.cache.clear())
  }

  /** A policy by id, from memory unless changes may have been missed. */
  cached(id: string): Promise<AuthPolicyRecord | undefined> {
    const repo = this.store.repos.policies
    if (this.store.stale) return repo.get(id)
    return this.cache.get(id, () => repo.get(id))
  }

  policyOf(identity: IdentityRecord): Promise<AuthPolicyRecord | undefined> {
    return this.cached(identity.authPolicyId)
  }

  /**
   * An identity's policy when it is kept in memory and known current, without a read: `{ policy }`
   * (undefined when the identity has none), or undefined when only a read can tell.
   */
  keptPolicyOf(identity: IdentityRecord): { policy: AuthPolicyRecord | undefined } | undefined {
    if (this.store.stale) return undefined
    const kept = this.cache.peek(identity.authPolicyId)
    return kept && { policy: kept.value }
  }

  /** Whether an identity's policy lets it log in with a primary method (and this signer). */
  async allowsPrimary(identity: IdentityRecord, method: PrimaryMethod): Promise<boolean> {
    const policy = await this.policyOf(identity)
    if (method === 'updb') return policy?.updbAllowed === true
    return policy?.extJwtAllowed === true
  }

  private emit(op: 'upsert' | 'delete', policy: AuthPolicyRecord): void {
    this.changes.emit({ entity: 'policy', op, id: policy.id, remote: false, record: policy })
  }

  private async check(tx: UnitOfWork, input: AuthPolicyInput): Promise<Fields> {
    if (input.secondary.requireTotp === true) {
      throw fieldError('INVALID_FIELD', 'secondary.requireTotp', 'this service has no TOTP', 'true')
    }
    const fields = fromInput(input)
    for (const signerId of fields.allowedSigners) {
      if (!(await tx.signers.get(signerId))) {
        throw notFound('signer', signerId, 'primary.extJwt.allowedSigners')
      }
    }
    const secondary = fields.requireExtJwtSigner
    if (secondary !== null && !(await tx.signers.get(secondary))) {
      throw notFound('signer', secondary, 'secondary.requireExtJwtSigner')
    }
    return fields
  }

  async get(id: string): Promise<AuthPolicyRecord> {
    const policy = await this.store.repos.policies.get(id)
    if (!policy) throw notFound('policy', id)
    return policy
  }

  list(params: ListParams) {
    return this.store.repos.policies.list(parseListQuery(params, AUTH_POLICY_LIST_SPEC))
  }

  async create(input: AuthPolicyInput, ctx?: AuditContext): Promise<AuthPolicyRecord> {
    const now = this.clock().toISOString()
    const [policy, event] = await this.store.transaction(async (tx) => {
      const record = {
        ...(await this.check(tx, input)),
        id: newId(),
        createdAt: now,
        updatedAt: now,
      }
      await tx.policies.insert(record)
      await tx.publish({ entity: 'policy', op: 'upsert', id: record.id })
      const changedFields = bodyFields(input, NESTED, true)
      return [
        record,
        await this.audit.record(tx, ctx, { action: 'create', ...ENTITY(record.id), changedFields }),
      ] as const
    })
    this.audit.logged(event)
    this.emit('upsert', policy)
    return policy
  }

  replace(id: string, input: AuthPolicyInput, ctx?: AuditContext): Promise<AuthPolicyRecord> {
    return this.update(id, () => input, ctx)
  }

  patch(id: string, patch: AuthPolicyPatch, ctx?: AuditContext): Promise<AuthPolicyRecord> {
    const next = (current: AuthPolicyRecord) =>
      applyPatch(toInput(current), patch, {
        defaults: { tags: {} },
        required: ['name', 'primary', 'secondary'],
        // tags are replaced whole, as on signers and identities (OpenZiti's PATCH).
        deep: ['primary', 'secondary'],
      })
    return this.update(id, next, ctx, bodyFields(patch, NESTED))
  }

  /** `patched`: the PATCH body's fields; a PUT records the fields whose stored value changed. */
  private async update(
    id: string,
    next: (current: AuthPolicyRecord) => AuthPolicyInput,
    ctx: AuditContext | undefined,
    patched?: string[],
  ): Promise<AuthPolicyRecord> {
    const [policy, event] = await this.store.transaction(async (tx) => {
      const current = await tx.policies.getForUpdate(id)
      if (!current) throw notFound('policy', id)
      const record = {
        ...(await this.check(tx, next(current))),
        id,
        createdAt: current.createdAt,
        updatedAt: this.clock().toISOString(),
      }
      await tx.policies.update(record)
      await tx.publish({ entity: 'policy', op: 'upsert', id })
      const event = await this.audit.record(tx, ctx, {
        action: patched ? 'patch' : 'update',
        ...ENTITY(id),
        changedFields: patched ?? differingFields(toInput(current), toInput(record), NESTED),
      })
      return [record, event] as const
    })
    this.audit.logged(event)
    this.emit('upsert', policy)
    return policy
  }

  async delete(id: string, ctx?: AuditContext): Promise<void> {
    const [policy, event] = await this.store.transaction(async (tx) => {
      const current = await tx.policies.get(id)
      if (!current) throw notFound('policy', id)
      if (id === 'default') {
        throw new AppError('CONFLICT', {
          cause: { field: 'id', reason: 'the default policy cannot be deleted', value: id },
        })
      }
      if (await tx.policies.isUsedByIdentity(id)) {
        throw new AppError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          cause: { field: 'authPolicyId', reason: 'an identity uses this policy', value: id },
        })
      }
      if (await tx.signers.usesEnrollPolicy(id)) {
        throw new AppError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          cause: {
            field: 'enrollAuthPolicyId',
            reason: 'a signer enrolls identities into this policy',
            value: id,
          },
        })
      }
      await tx.policies.delete(id)
      await tx.publish({ entity: 'policy', op: 'delete', id })
      return [
        current,
        await this.audit.record(tx, ctx, { action: 'delete', ...ENTITY(id) }),
      ] as const
    })
    this.audit.logged(event)
    this.emit('delete', policy)
  }
}
