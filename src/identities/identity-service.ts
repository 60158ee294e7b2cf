import { AppError, fieldError } from '../errors.js'
import { newId } from '../ids.js'
import type { AuthPolicyRecord, AuthPolicyRepository } from '../store/auth-policy-repository.js'
import type { Db } from '../store/db.js'
import {
  IDENTITY_LIST_SPEC,
  type IdentityRecord,
  IdentityRepository,
} from '../store/identity-repository.js'
import { type ListParams, parseListQuery } from '../store/list-query.js'
import { hashPassword } from './password.js'
import type { SessionService } from './session-service.js'

export interface IdentityInput {
  name: string
  externalId?: string | null | undefined
  isAdmin?: boolean | null | undefined
  disabled?: boolean | null | undefined
  authPolicyId?: string | null | undefined
  tags?: Record<string, unknown> | null | undefined
}
export type IdentityPatch = Partial<{ [K in keyof IdentityInput]: IdentityInput[K] | null }>

export type IdentityChange = { type: 'upsert' | 'delete'; identity: IdentityRecord }

type Fields = Pick<
  IdentityRecord,
  'name' | 'externalId' | 'isAdmin' | 'disabled' | 'authPolicyId' | 'tags'
>

function fromInput(input: IdentityInput): Fields {
  return {
    name: input.name,
    externalId: input.externalId || null,
    isAdmin: input.isAdmin ?? false,
    disabled: input.disabled ?? false,
    authPolicyId: input.authPolicyId || 'default',
    tags: input.tags ?? {},
  }
}

function applyPatch(current: IdentityRecord, patch: IdentityPatch): Fields {
  if (Object.hasOwn(patch, 'name') && patch.name === null) {
    throw fieldError('COULD_NOT_VALIDATE', 'name', 'name cannot be null')
  }
  const merged = { ...current }
  for (const key of [
    'name',
    'externalId',
    'isAdmin',
    'disabled',
    'authPolicyId',
    'tags',
  ] as const) {
    if (Object.hasOwn(patch, key)) Object.assign(merged, { [key]: patch[key] })
  }
  return fromInput(merged)
}

export function identityNotFound(id: string): AppError {
  return new AppError('NOT_FOUND', {
    cause: { field: 'id', reason: `no identity with id ${id}`, value: id },
  })
}

function lastAdmin(field: string, action: string): AppError {
  return new AppError('CONFLICT', {
    cause: {
      field,
      reason: `the last enabled admin cannot be ${action}; make another identity an enabled admin first`,
    },
  })
}

/** Identities: who may log in, as what, under which authentication policy. */
export class IdentityService {
  readonly repository: IdentityRepository
  private readonly listeners: ((change: IdentityChange) => void)[] = []

  constructor(
    private readonly db: Db,
    private readonly policies: AuthPolicyRepository,
    private readonly sessions: SessionService,
    private readonly clock: () => Date,
  ) {
    this.repository = new IdentityRepository(db)
  }

  onChange(listener: (change: IdentityChange) => void): void {
    this.listeners.push(listener)
  }

  private emit(change: IdentityChange): void {
    for (const listener of this.listeners) listener(change)
  }

  private checkPolicy(fields: Fields): void {
    if (!this.policies.get(fields.authPolicyId)) {
      throw fieldError(
        'COULD_NOT_VALIDATE',
        'authPolicyId',
        'no policy has this id',
        fields.authPolicyId,
      )
    }
  }

  get(id: string): IdentityRecord {
    const identity = this.repository.get(id)
    if (!identity) throw identityNotFound(id)
    return identity
  }

  list(params: ListParams) {
    return this.repository.list(parseListQuery(params, IDENTITY_LIST_SPEC))
  }

  policyOf(identity: IdentityRecord): AuthPolicyRecord | undefined {
    return this.policies.get(identity.authPolicyId)
  }

  create(input: IdentityInput): IdentityRecord {
    const now = this.clock().toISOString()
    const fields = fromInput(input)
    const identity = this.db.transaction(() => {
      this.checkPolicy(fields)
      const record = {
        ...fields,
        id: newId(),
        isDefaultAdmin: false,
        createdAt: now,
        updatedAt: now,
      }
      this.repository.insert(record)
      return record
    })()
    this.emit({ type: 'upsert', identity })
    return identity
  }

  replace(id: string, input: IdentityInput): IdentityRecord {
    return this.update(id, () => fromInput(input))
  }

  patch(id: string, patch: IdentityPatch): IdentityRecord {
    return this.update(id, (current) => applyPatch(current, patch))
  }

  private update(id: string, change: (current: IdentityRecord) => Fields): IdentityRecord {
    const identity = this.db.transaction(() => {
      const current = this.get(id)
      const fields = change(current)
      this.checkPolicy(fields)
      const wasActiveAdmin = current.isAdmin && !current.disabled
      if (wasActiveAdmin && this.repository.countEnabledAdmins() === 1) {
        if (!fields.isAdmin) throw lastAdmin('isAdmin', 'demoted')
        if (fields.disabled) throw lastAdmin('disabled', 'disabled')
      }
      const record = { ...current, ...fields, updatedAt: this.clock().toISOString() }
      this.repository.update(record)
      if (record.disabled) this.sessions.endForIdentity(id)
      return record
    })()
    this.emit({ type: 'upsert', identity })
    return identity
  }

  delete(id: string): void {
    const identity = this.db.transaction(() => {
      const current = this.get(id)
      if (current.isAdmin && !current.disabled && this.repository.countEnabledAdmins() === 1) {
        throw lastAdmin('id', 'deleted')
      }
      this.repository.delete(id)
      return current
    })()
    this.emit({ type: 'delete', identity })
  }

  /** Sets or replaces a password, checked against the identity's policy rules. */
  async setPassword(id: string, password: string): Promise<void> {
    const identity = this.get(id)
    const policy = this.policyOf(identity)
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
    if (!this.repository.setPasswordHash(id, hash, this.clock().toISOString())) {
      throw identityNotFound(id)
    }
  }
}
