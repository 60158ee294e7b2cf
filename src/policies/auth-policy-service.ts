import { AppError, fieldError } from '../errors.js'
import { newId } from '../ids.js'
import {
  AUTH_POLICY_LIST_SPEC,
  type AuthPolicyRecord,
  AuthPolicyRepository,
} from '../store/auth-policy-repository.js'
import type { Db } from '../store/db.js'
import { type ListParams, parseListQuery } from '../store/list-query.js'
import type { SignerRepository } from '../store/signer-repository.js'

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

export type AuthPolicyChange = { type: 'upsert' | 'delete'; policy: AuthPolicyRecord }

type Fields = Omit<AuthPolicyRecord, 'id' | 'createdAt' | 'updatedAt'>

function fromInput(input: AuthPolicyInput): Fields {
  const { cert, updb, extJwt } = input.primary
  return {
    name: input.name,
    certAllowed: cert.allowed,
    updbAllowed: updb.allowed,
    updbMinPasswordLength: Math.max(MIN_PASSWORD_LENGTH, updb.minPasswordLength ?? 0),
    updbRequireSpecialChar: updb.requireSpecialChar ?? false,
    updbRequireNumberChar: updb.requireNumberChar ?? false,
    updbRequireMixedCase: updb.requireMixedCase ?? false,
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
      cert: { allowed: p.certAllowed },
      updb: {
        allowed: p.updbAllowed,
        minPasswordLength: p.updbMinPasswordLength,
        requireSpecialChar: p.updbRequireSpecialChar,
        requireNumberChar: p.updbRequireNumberChar,
        requireMixedCase: p.updbRequireMixedCase,
      },
      extJwt: { allowed: p.extJwtAllowed, allowedSigners: p.allowedSigners },
    },
    secondary: { requireTotp: false, requireExtJwtSigner: p.requireExtJwtSigner },
    tags: p.tags,
  }
}

function merge(base: unknown, patch: unknown): unknown {
  if (patch === undefined) return base
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  if (base === null || typeof base !== 'object' || Array.isArray(base)) return patch
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) }
  for (const [key, value] of Object.entries(patch)) out[key] = merge(out[key], value)
  return out
}

export function policyNotFound(id: string, field = 'id'): AppError {
  return new AppError('NOT_FOUND', {
    cause: { field, reason: `no authentication policy with id ${id}`, value: id },
  })
}

/** Authentication policies: which primary methods an identity may use, and its secondary factor. */
export class AuthPolicyService {
  readonly repository: AuthPolicyRepository
  private readonly listeners: ((change: AuthPolicyChange) => void)[] = []

  constructor(
    private readonly db: Db,
    private readonly signers: SignerRepository,
    private readonly clock: () => Date,
  ) {
    this.repository = new AuthPolicyRepository(db)
  }

  onChange(listener: (change: AuthPolicyChange) => void): void {
    this.listeners.push(listener)
  }

  private emit(change: AuthPolicyChange): void {
    for (const listener of this.listeners) listener(change)
  }

  private check(input: AuthPolicyInput): Fields {
    if (input.secondary.requireTotp === true) {
      throw fieldError('INVALID_FIELD', 'secondary.requireTotp', 'this service has no TOTP', 'true')
    }
    const fields = fromInput(input)
    for (const signerId of fields.allowedSigners) {
      if (!this.signers.get(signerId))
        throw unknownSigner('primary.extJwt.allowedSigners', signerId)
    }
    const secondary = fields.requireExtJwtSigner
    if (secondary !== null && !this.signers.get(secondary)) {
      throw unknownSigner('secondary.requireExtJwtSigner', secondary)
    }
    return fields
  }

  get(id: string): AuthPolicyRecord {
    const policy = this.repository.get(id)
    if (!policy) throw policyNotFound(id)
    return policy
  }

  list(params: ListParams) {
    return this.repository.list(parseListQuery(params, AUTH_POLICY_LIST_SPEC))
  }

  create(input: AuthPolicyInput): AuthPolicyRecord {
    const now = this.clock().toISOString()
    const policy = this.db.transaction(() => {
      const record = { ...this.check(input), id: newId(), createdAt: now, updatedAt: now }
      this.repository.insert(record)
      return record
    })()
    this.emit({ type: 'upsert', policy })
    return policy
  }

  replace(id: string, input: AuthPolicyInput): AuthPolicyRecord {
    return this.update(id, () => input)
  }

  patch(id: string, patch: AuthPolicyPatch): AuthPolicyRecord {
    return this.update(id, (current) => merge(toInput(current), patch) as AuthPolicyInput) // same shape, merged key by key
  }

  private update(
    id: string,
    next: (current: AuthPolicyRecord) => AuthPolicyInput,
  ): AuthPolicyRecord {
    const policy = this.db.transaction(() => {
      const current = this.get(id)
      const record = {
        ...this.check(next(current)),
        id,
        createdAt: current.createdAt,
        updatedAt: this.clock().toISOString(),
      }
      this.repository.update(record)
      return record
    })()
    this.emit({ type: 'upsert', policy })
    return policy
  }

  delete(id: string): void {
    const policy = this.db.transaction(() => {
      const current = this.get(id)
      if (id === 'default') {
        throw new AppError('CONFLICT', {
          cause: { field: 'id', reason: 'the default policy cannot be deleted', value: id },
        })
      }
      if (this.repository.isUsedByIdentity(id)) {
        throw new AppError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          cause: { field: 'authPolicyId', reason: 'an identity uses this policy', value: id },
        })
      }
      this.repository.delete(id)
      return current
    })()
    this.emit({ type: 'delete', policy })
  }
}

function unknownSigner(field: string, id: string): AppError {
  return new AppError('NOT_FOUND', {
    cause: { field, reason: `no external JWT signer with id ${id}`, value: id },
  })
}
