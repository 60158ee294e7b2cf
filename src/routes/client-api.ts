import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import clientSignerRoutes from './client-signers/index.js'
import type { ClientSignerPages } from './client-signers/pages.js'
import enrollRoutes, { type EnrollRoutesOptions } from './enroll/index.js'
import sessionRoutes, { type SessionRoutesOptions } from './sessions/index.js'

export interface ClientApiOptions {
  sessions: SessionRoutesOptions
  /** The kept pages of the signer list, shared with the lane that answers it before Fastify. */
  pages: ClientSignerPages
  enroll: EnrollRoutesOptions
}

/** The edge client API (`/edge/client/v1`): login, the caller's session, the signer list, enrollment. */
export const clientApi: FastifyPluginAsyncTypebox<ClientApiOptions> = async (app, o) => {
  await app.register(sessionRoutes, o.sessions)
  await app.register(clientSignerRoutes, { pages: o.pages })
  await app.register(enrollRoutes, o.enroll)
}
