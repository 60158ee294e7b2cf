import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ControllerRegistry } from '../controllers/controller-registry.js'
import clientSignerRoutes from './client-signers/index.js'
import type { ClientSignerPages } from './client-signers/pages.js'
import { controllerRoutes } from './controllers/index.js'
import enrollRoutes, { type EnrollRoutesOptions } from './enroll/index.js'
import sessionRoutes, { type SessionRoutesOptions } from './sessions/index.js'

export interface ClientApiOptions {
  sessions: SessionRoutesOptions
  /** The kept pages of the signer list, shared with the lane that answers it before Fastify. */
  pages: ClientSignerPages
  enroll: EnrollRoutesOptions
  controllers: Pick<ControllerRegistry, 'list' | 'filterableFields'>
}

/**
 * The edge client API (`/edge/client/v1`): login, the caller's session, the signer list,
 * enrollment, and the controllers list (any session may read it, as OpenZiti's spec says).
 */
export const clientApi: FastifyPluginAsyncTypebox<ClientApiOptions> = async (app, o) => {
  await app.register(sessionRoutes, o.sessions)
  await app.register(clientSignerRoutes, { pages: o.pages })
  await app.register(enrollRoutes, o.enroll)
  await app.register(controllerRoutes, {
    prefix: '/controllers',
    controllers: o.controllers,
    auth: o.sessions.auth,
    admin: false,
  })
}
