import type { SignerRecord, SignerService } from '../../signers/signer-service.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { resourceRoutes, selfLink } from '../resource-routes.js'
import {
  SignerBodySchema,
  type SignerDetail,
  SignerDetailEnvelopeSchema,
  type SignerDetailSchema,
  SignerListEnvelopeSchema,
  SignerPatchSchema,
} from './schemas.js'

export function toSignerDetail(s: SignerRecord): SignerDetail {
  return {
    id: s.id,
    _links: selfLink('external-jwt-signers', s.id),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: s.tags,
    name: s.name,
    enabled: s.enabled,
    issuer: s.issuer,
    audience: s.audience,
    jwksEndpoint: s.jwksEndpoint,
    certPem: s.certPem,
    kid: s.kid,
    claimsProperty: s.claimsProperty,
    useExternalId: s.useExternalId,
    externalAuthUrl: s.externalAuthUrl,
    clientId: s.clientId,
    scopes: s.scopes,
    targetToken: s.targetToken,
    ...(s.enrollToTokenEnabled ? { enrollToTokenEnabled: true } : {}),
    ...(s.enrollToCertEnabled ? { enrollToCertEnabled: true } : {}),
    enrollNameClaimsSelector: s.enrollNameClaimsSelector,
    enrollAttributeClaimsSelector: s.enrollAttributeClaimsSelector ?? '', // a plain string upstream
    enrollAuthPolicyId: s.enrollAuthPolicyId,
    commonName: s.commonName ?? '',
    fingerprint: s.fingerprint,
    notBefore: s.notBefore,
    notAfter: s.notAfter,
    tokenRules: s.tokenRules,
  }
}

/** Management API of external JWT signers (admin session required). */
export function signerRoutesOptions(signers: SignerService, auth: AuthDeps) {
  return {
    segment: 'external-jwt-signers',
    tag: 'External JWT Signers',
    service: signers,
    body: SignerBodySchema,
    patch: SignerPatchSchema,
    detailEnvelope: SignerDetailEnvelopeSchema,
    listEnvelope: SignerListEnvelopeSchema,
    toDetail: toSignerDetail,
    auth: requireSession(auth, { admin: true }),
  }
}

export const signerRoutes = resourceRoutes<
  SignerRecord,
  typeof SignerBodySchema,
  typeof SignerPatchSchema,
  typeof SignerDetailSchema
>()
