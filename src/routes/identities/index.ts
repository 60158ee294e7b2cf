import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { IdentityRecord, IdentityService } from '../../identities/identity-service.js'
import type { SessionService } from '../../identities/session-service.js'
import type { AuthPolicyService } from '../../policies/auth-policy-service.js'
import { auditContext } from '../audit-events/context.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { EmptyEnvelopeSchema, errorResponses, IdParamsSchema } from '../common-schemas.js'
import { resourceRoutes, selfLink } from '../resource-routes.js'
import {
  IdentityBodySchema,
  type IdentityDetail,
  IdentityDetailEnvelopeSchema,
  type IdentityDetailSchema,
  IdentityListEnvelopeSchema,
  IdentityPatchSchema,
  PasswordBodySchema,
} from './schemas.js'

/**
 * An identity as the edge API shows it (`identityDetail`), given its policy's name and whether it
 * has a session; also the caller's own identity (`current-identity`).
 */
export function toIdentityDetail(
  i: IdentityRecord,
  policyName: string,
  hasApiSession: boolean,
): IdentityDetail {
  return {
    id: i.id,
    _links: selfLink('identities', i.id),
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
    tags: i.tags,
    name: i.name,
    externalId: i.externalId,
    isAdmin: i.isAdmin,
    isDefaultAdmin: i.isDefaultAdmin,
    disabled: i.disabled,
    authPolicyId: i.authPolicyId,
    authPolicy: {
      id: i.authPolicyId,
      name: policyName,
      entity: 'auth-policies',
      _links: selfLink('auth-policies', i.authPolicyId),
    },
    hasApiSession,
    type: {
      id: 'Default',
      name: 'Default',
      entity: 'identity-types',
      _links: selfLink('identity-types', 'Default'),
    },
    typeId: 'Default',
    roleAttributes: i.roleAttributes,
    authenticators: {},
    enrollment: {},
    envInfo: {},
    sdkInfo: {},
    hasEdgeRouterConnection: false,
    edgeRouterConnectionStatus: 'offline',
    isMfaEnabled: false,
    serviceHostingPrecedences: {},
    serviceHostingCosts: {},
    defaultHostingCost: 0,
    defaultHostingPrecedence: 'default',
    permissions: [],
  }
}

export function identityDetail(policies: AuthPolicyService, sessions: SessionService) {
  return async (i: IdentityRecord): Promise<IdentityDetail> =>
    toIdentityDetail(i, (await policies.policyOf(i))?.name ?? '', await sessions.hasSession(i.id))
}

export function identityRoutesOptions(
  identities: IdentityService,
  policies: AuthPolicyService,
  auth: AuthDeps,
) {
  return {
    segment: 'identities',
    tag: 'Identities',
    service: identities,
    body: IdentityBodySchema,
    patch: IdentityPatchSchema,
    detailEnvelope: IdentityDetailEnvelopeSchema,
    listEnvelope: IdentityListEnvelopeSchema,
    toDetail: identityDetail(policies, auth.sessions),
    auth: requireSession(auth, { admin: true }),
  }
}

export const identityRoutes = resourceRoutes<
  IdentityRecord,
  typeof IdentityBodySchema,
  typeof IdentityPatchSchema,
  typeof IdentityDetailSchema
>()

/** `PUT /identities/{id}/password`: sets or replaces an identity's password. */
export const identityPasswordRoutes: FastifyPluginAsyncTypebox<{
  identities: IdentityService
  auth: AuthDeps
}> = async (app, { identities, auth }) => {
  app.addHook('onRequest', requireSession(auth, { admin: true }))
  app.put(
    '/:id/password',
    {
      schema: {
        tags: ['Identities'],
        params: IdParamsSchema,
        body: PasswordBodySchema,
        response: { 200: EmptyEnvelopeSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => {
      const own = request.auth?.session.id // the caller's session survives its password change
      await identities.setPassword(
        request.params.id,
        request.body.password,
        auditContext(request),
        own,
      )
      return { data: {}, meta: {} }
    },
  )
}
