import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Services } from '../services.js'
import { auditEventRoutes } from './audit-events/index.js'
import { type AuthDeps, requireSession } from './auth-hooks.js'
import { authPolicyRoutes, authPolicyRoutesOptions } from './auth-policies/index.js'
import { controllerRoutes } from './controllers/index.js'
import { databaseRoutes } from './database/index.js'
import {
  identityPasswordRoutes,
  identityRoutes,
  identityRoutesOptions,
} from './identities/index.js'
import { identityRoleAttributeRoutes } from './identities/role-attributes.js'
import type { ResourceRoutesOptions } from './resource-routes.js'
import sessionRoutes, { type SessionRoutesOptions } from './sessions/index.js'
import { signerRoutes, signerRoutesOptions } from './signers/index.js'
import { signerKeyRoutes } from './signers/keys.js'
import { signerToolRoutes } from './signers/tools.js'
import { summaryRoutes } from './summary/index.js'

export interface ApiOptions {
  services: Services
  auth: AuthDeps
  /** Login, current session and logout: the same on both APIs. */
  sessions: SessionRoutesOptions
  /** Told each admin list's path and kept default page (see ResourceRoutesOptions.keptPage). */
  keptPage?: ResourceRoutesOptions<never, never, never, never>['keptPage']
}

/**
 * The edge management API (`/edge/management/v1`): signers, identities, policies, audit events,
 * database, controllers.
 */
export const managementApi: FastifyPluginAsyncTypebox<ApiOptions> = async (app, o) => {
  const { services, auth } = o
  const { signers, identities, policies } = services
  // OpenZiti serves signers under both names; the CLI uses the short one.
  for (const path of ['/external-jwt-signers', '/ext-jwt-signers']) {
    await app.register(signerRoutes, {
      prefix: path,
      ...signerRoutesOptions(signers, auth),
      keptPage: o.keptPage,
    })
    await app.register(signerKeyRoutes, { prefix: path, keys: services.signerKeys, auth })
    await app.register(signerToolRoutes, {
      prefix: path,
      auth: requireSession(auth, { admin: true }),
      discover: services.discover,
      explain: services.explain,
    })
  }
  await app.register(identityRoutes, {
    prefix: '/identities',
    ...identityRoutesOptions(identities, policies, auth),
    keptPage: o.keptPage,
  })
  await app.register(identityPasswordRoutes, { prefix: '/identities', identities, auth })
  await app.register(identityRoleAttributeRoutes, {
    prefix: '/identity-role-attributes',
    identities,
    auth,
  })
  await app.register(authPolicyRoutes, {
    prefix: '/auth-policies',
    ...authPolicyRoutesOptions(policies, auth),
  })
  await app.register(sessionRoutes, o.sessions)
  await app.register(auditEventRoutes, { prefix: '/audit-events', audit: services.audit, auth })
  await app.register(summaryRoutes, { prefix: '/summary', counts: services.counts, auth })
  await app.register(databaseRoutes, { prefix: '/database', backups: services.backups, auth })
  await app.register(controllerRoutes, {
    prefix: '/controllers',
    controllers: services.controllers,
    auth,
    admin: true,
  })
}
