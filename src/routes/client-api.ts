import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import clientSignerRoutes from './client-signers/index.js'
import type { ClientSignerPages } from './client-signers/pages.js'
import sessionRoutes, { type SessionRoutesOptions } from './sessions/index.js'

export interface ClientApiOptions {
  sessions: SessionRoutesOptions
  /** The kept pages of the signer list, shared with the lane that answers it before Fastify. */
  pages: ClientSignerPages
}

/** The edge client API (`/edge/client/v1`): login, the caller's session and the signer list. */
export const clientApi: FastifyPluginAsyncTypebox<ClientApiOptions> = async (app, o) => {
  await app.register(sessionRoutes, o.sessions)
  await app.register(clientSignerRoutes, { pages: o.pages })
}
