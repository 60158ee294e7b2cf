import type { AuditContext, AuditService } from '../audit/audit-service.js'
import { bodyFields, differingFields } from '../audit/changed-fields.js'
import type { ChangeBus } from '../changes.js'
import { AppError, fieldError } from '../errors.js'
import { newId } from '../ids.js'
import { LookupCache } from '../lookup-cache.js'
import type { AuthPolicyService } from '../policies/auth-policy-service.js'
import { applyPatch, notFound, type PatchRules } from '../resources.js'
import type { IdentityRecord, Store, UnitOfWork } from '../store/contract.js'
import { type ListPage, type ListParams, parseListQuery } from '../store/query/list-query.js'
import {
  IDENTITY_LIST_SPEC,
  ROLE_ATTRIBUTE_LIST_SPEC,
} from '../store/sqlite/identity-repository.js'
import { hashPassword } from './password.js'

export type { IdentityRecord }

export interface IdentityInput {
  name: string
  externalId?: string | null | undefined
  isAdmin?: boolean | null | undefined
  disabled?: boolean | null | undefined
  authPolicyId?: string | null | undefined
  roleAttributes?: string[] | null | undefined
  tags?: Record<string, unknown> | null | undefined
}
export type IdentityPatch = Partial<{ [K in keyof IdentityInput]: IdentityInput[K] | null }>

type Fields = Pick<
  IdentityRecord,
  'name' | 'externalId' | 'isAdmin' | 'disabled' | 'authPolicyId' | 'roleAttributes' | 'tags'
>

function fromInput(input: IdentityInput): Fields {
  return {
    name: input.name,
    externalId: input.externalId || null,
    isAdmin: input.isAdmin ?? false,
    disabled: input.disabled ?? false,
    authPolicyId: input.authPolicyId || 'default',
    // Kept once each, in the order given: a set, as OpenZiti keeps it.
    roleAttributes: [...new Set(input.roleAttributes ?? [])],
    tags: input.tags ?? {},
  }
}

const PATCH_RULES: PatchRules<IdentityRecord> = {
  defaults: {
    isAdmin: false,
    disabled: false,
    authPolicyId: 'default',
    roleAttributes: [],
    tags: {},
  },
  required: ['name'],
}

function lastAdmin(field: string, action: string): AppError {
  return new AppError('CONFLICT', {
    cause: {
      field,
      reason: `the last enabled admin cannot be ${action}; make another identity an enabled admin first`,
    },
  })
}

const ENTITY = (entityId: string) => ({ entityType: 'identities' as const, entityId })

/** Identities: who may log in, as what, under which authentication policy. */
export class IdentityService {
  readonly filterableFields = Object.keys(IDENTITY_LIST_SPEC.filterable)

  constructor(
    private readonly store: Store,
    private readonly changes: ChangeBus,
    private readonly policies: AuthPolicyService,
    private readonly clock: () => Date,
    private readonly audit: AuditService,
  ) {
    changes.on((event) => {
      if (event.entity === 'identity') {
        this.known.clear()
        this.pages.clear()
      }
      // A page shows each identity's policy name and whether it has a session.
      if (
        event.entity === 'identity' ||
        event.entity === 'policy' ||
        event.entity === 'session' ||
        event.entity === 'identity-sessions'
      ) {
        for (const listener of this.listListeners) listener()
      }
    })
    // Missed changes (the notification connection went down) or caches to reread (it is back).
    // (A change heard from another instance arrives on the change bus above: an identity change
    // empties `known` there, and sessions opened elsewhere, every login, leave it alone.)
    store.onFeed((event) => {
      if (event.type === 'change') return
      this.known.clear()
      this.pages.clear()
      for (const listener of this.listListeners) listener()
    })
  }

  private readonly listListeners: (() => void)[] = []

  /** Told when a kept identity page may no longer be what a read would give. */
  onListChange(listener: () => void): void {
    this.listListeners.push(listener)
  }

  /**
   * The version identity pages are kept for, or undefined while changes may have been missed.
   * Every change that shows on a page (an identity, a policy's name, a session opened or ended),
   * here or on another instance (through the store's notifications), empties the kept pages.
   */
  listVersion(): string | undefined {
    return this.store.stale ? undefined : ''
  }

  /** Identities by id and by externalId, read on every login and request: kept until a change. */
  private readonly known = new LookupCache<IdentityRecord | undefined>()
  private readonly pages = new LookupCache<ListPage<IdentityRecord>>(256)

  private emit(op: 'upsert' | 'delete', identity: IdentityRecord): void {
    this.changes.emit({ entity: 'identity', op, id: identity.id, remote: false, record: identity })
  }

  private async checkPolicy(tx: UnitOfWork, fields: Fields): Promise<void> {
    if (!(await tx.policies.get(fields.authPolicyId))) {
      throw fieldError(
        'COULD_NOT_VALIDATE',
        'authPolicyId',
        'no policy has this id',
        fields.authPolicyId,
      )
    }
  }

  async get(id: string): Promise<IdentityRecord> {
    const identity = await this.store.repos.identities.get(id)
    if (!identity) throw notFound('identity', id)
    return identity
  }

  /** An identity by id or undefined (login paths). */
  find(id: string): Promise<IdentityRecord | undefined> {
    const repo = this.store.repos.identities
    if (this.store.stale) return repo.get(id)
    return this.known.get(`id:${id}`, () => repo.get(id))
  }

  /**
   * The identity of an id when it is kept in memory and known current, without a read; undefined
   * otherwise (unknown, not kept yet, or changes may have been missed: `find` then decides).
   */
  keptIdentity(id: string): IdentityRecord | undefined {
    return this.store.stale ? undefined : this.known.peek(`id:${id}`)?.value
  }

  findByExternalId(externalId: string): Promise<IdentityRecord | undefined> {
    const repo = this.store.repos.identities
    if (this.store.stale) return repo.getByExternalId(externalId)
    return this.known.get(`ext:${externalId}`, () => repo.getByExternalId(externalId))
  }

  /** The identity of a user name and its password hash (password login). */
  async credentials(name: string) {
    const identity = await this.store.repos.identities.getByName(name)
    const hash = identity ? await this.store.repos.identities.passwordHash(identity.id) : null
    return { identity, hash }
  }

  /**
   * A page of identities, kept until an identity changes here or on another instance; read while
   * changes may have been missed.
   */
  list(params: ListParams) {
    const query = parseListQuery(params, IDENTITY_LIST_SPEC)
    const repo = this.store.repos.identities
    if (this.store.stale) return repo.list(query)
    const key = `${params.filter}\u0000${params.sort}\u0000${params.limit}\u0000${params.offset}`
    return this.pages.get(key, () => repo.list(query))
  }

  /** A page of the distinct role attributes of identities (`GET /identity-role-attributes`). */
  roleAttributes(params: ListParams): Promise<ListPage<string>> {
    return this.store.repos.identities.roleAttributes(
      parseListQuery(params, ROLE_ATTRIBUTE_LIST_SPEC),
    )
  }

  async create(input: IdentityInput, ctx?: AuditContext): Promise<IdentityRecord> {
    const now = this.clock().toISOString()
    const fields = fromInput(input)
    const [identity, event] = await this.store.transaction(async (tx) => {
      await this.checkPolicy(tx, fields)
      const record = {
        ...fields,
        id: newId(),
        isDefaultAdmin: false,
        createdAt: now,
        updatedAt: now,
      }
      await tx.identities.insert(record)
      await tx.publish({ entity: 'identity', op: 'upsert', id: record.id })
      const changedFields = bodyFields(input, [], true)
      return [
        record,
        await this.audit.record(tx, ctx, { action: 'create', ...ENTITY(record.id), changedFields }),
      ] as const
    })
    this.audit.logged(event)
    this.emit('upsert', identity)
    return identity
  }

  replace(id: string, input: IdentityInput, ctx?: AuditContext): Promise<IdentityRecord> {
    return this.update(id, () => fromInput(input), ctx)
  }

  patch(id: string, patch: IdentityPatch, ctx?: AuditContext): Promise<IdentityRecord> {
    const change = (current: IdentityRecord) => fromInput(applyPatch(current, patch, PATCH_RULES))
    return this.update(id, change, ctx, bodyFields(patch))
  }

  /**
   * The identity about to change, read under the admin lock: every update and delete takes it
   * before reading, so the count of enabled admins that follows sees every change committed
   * before it (a read before the lock could write back a stale isAdmin or disabled).
   */
  private async lockedCurrent(tx: UnitOfWork, id: string): Promise<IdentityRecord> {
    await tx.identities.lockAdmins()
    const current = await tx.identities.get(id)
    if (!current) throw notFound('identity', id)
    return current
  }

  /** `patched`: the PATCH body's keys; a PUT records the fields whose stored value changed. */
  private async update(
    id: string,
    change: (current: IdentityRecord) => Fields,
    ctx: AuditContext | undefined,
    patched?: string[],
  ): Promise<IdentityRecord> {
    const [identity, event] = await this.store.transaction(async (tx) => {
      const current = await this.lockedCurrent(tx, id)
      const fields = change(current)
      await this.checkPolicy(tx, fields)
      const wasActiveAdmin = current.isAdmin && !current.disabled
      if (wasActiveAdmin && (await tx.identities.countEnabledAdmins()) === 1) {
        if (!fields.isAdmin) throw lastAdmin('isAdmin', 'demoted')
        if (fields.disabled) throw lastAdmin('disabled', 'disabled')
      }
      const record = { ...current, ...fields, updatedAt: this.clock().toISOString() }
      await tx.identities.update(record)
      if (record.disabled) await tx.sessions.deleteForIdentity(id)
      await tx.publish({ entity: 'identity', op: 'upsert', id })
      const event = await this.audit.record(tx, ctx, {
        action: patched ? 'patch' : 'update',
        ...ENTITY(id),
        changedFields: patched ?? differingFields(current, record),
      })
      return [record, event] as const
    })
    this.audit.logged(event)
    this.emit('upsert', identity)
    return identity
  }

  async delete(id: string, ctx?: AuditContext): Promise<void> {
    const [identity, event] = await this.store.transaction(async (tx) => {
      const current = await this.lockedCurrent(tx, id)
      const enabledAdmins = await tx.identities.countEnabledAdmins()
      if (current.isAdmin && !current.disabled && enabledAdmins === 1) {
        throw lastAdmin('id', 'deleted')
      }
      await tx.identities.delete(id)
      await tx.publish({ entity: 'identity', op: 'delete', id })
      return [
        current,
        await this.audit.record(tx, ctx, { action: 'delete', ...ENTITY(id) }),
      ] as const
    })
    this.audit.logged(event)
    this.emit('delete', identity)
  }

  /**
   * Sets or replaces a password, checked against the identity's policy rules. Every other session
   * of the identity ends with the change (whoever knew the old password is logged out); the
   * session `keepSessionId`, the caller's own, stays.
   */
  async setPassword(
    id: string,
    password: string,
    ctx?: AuditContext,
    keepSessionId?: string,
  ): Promise<void> {
    const identity = await this.get(id)
    const policy = await this.policies.policyOf(identity)
    const min = policy?.updbMinPasswordLength ?? 12
    const rules: [boolean, string][] = [
      [password.length >= min, `must be at least ${min} characters`],
      [
        !policy?.updbRequireSpecialChar || /[^A-Za-z0-9]/.test(password),
        'needs a special character',
      ],
      [!policy?.updbRequireNumberChar || /\d/.test(password), 'needs a digit'],
      [
        !policy?.updbRequireMixedCase || (/[a-z]/.test(password) && /[A-Z]/.test(password)),
        'needs upper and lower case letters',
      ],
    ]
    for (const [ok, reason] of rules) {
      if (!ok) throw fieldError('COULD_NOT_VALIDATE', 'password', reason)
    }
    const hash = await hashPassword(password)
    const now = this.clock().toISOString()
    const event = await this.store.transaction(async (tx) => {
      if (!(await tx.identities.setPasswordHash(id, hash, now))) throw notFound('identity', id)
      // Kept sessions are forgotten by the identity change emitted below.
      await tx.sessions.deleteForIdentityExcept(id, keepSessionId ?? '')
      await tx.publish({ entity: 'identity', op: 'upsert', id })
      const changedFields = ['password']
      return this.audit.record(tx, ctx, { action: 'set-password', ...ENTITY(id), changedFields })
    })
    // updatedAt moved: whatever keeps identities must reread this one.
    this.changes.emit({ entity: 'identity', op: 'upsert', id, remote: false })
    this.audit.logged(event)
  }
}
