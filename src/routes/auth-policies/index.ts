import type { AuthPolicyRecord, AuthPolicyService } from '../../policies/auth-policy-service.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { resourceRoutes, selfLink } from '../resource-routes.js'
import {
  AuthPolicyBodySchema,
  type AuthPolicyDetail,
  AuthPolicyDetailEnvelopeSchema,
  type AuthPolicyDetailSchema,
  AuthPolicyListEnvelopeSchema,
  AuthPolicyPatchSchema,
} from './schemas.js'

export function toAuthPolicyDetail(p: AuthPolicyRecord): AuthPolicyDetail {
  return {
    id: p.id,
    _links: selfLink('auth-policies', p.id),
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
    tags: p.tags,
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
  }
}

export function authPolicyRoutesOptions(policies: AuthPolicyService, auth: AuthDeps) {
  return {
    segment: 'auth-policies',
    tag: 'Authentication Policies',
    service: policies,
    body: AuthPolicyBodySchema,
    patch: AuthPolicyPatchSchema,
    detailEnvelope: AuthPolicyDetailEnvelopeSchema,
    listEnvelope: AuthPolicyListEnvelopeSchema,
    toDetail: toAuthPolicyDetail,
    auth: requireSession(auth, { admin: true }),
  }
}

export const authPolicyRoutes = resourceRoutes<
  AuthPolicyRecord,
  typeof AuthPolicyBodySchema,
  typeof AuthPolicyPatchSchema,
  typeof AuthPolicyDetailSchema
>()
