import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ControllerRegistry } from '../../controllers/controller-registry.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { errorResponses, ListQuerySchema } from '../common-schemas.js'
import { selfLink } from '../resource-routes.js'
import { ControllerListEnvelopeSchema } from './schemas.js'

export interface ControllerRoutesOptions {
  controllers: Pick<ControllerRegistry, 'list' | 'filterableFields'>
  auth: AuthDeps
  /** The management list is for admins; the client list for any session (as OpenZiti's spec). */
  admin: boolean
}

/** `GET /controllers`: the instances that share the store, with the list machinery. */
export const controllerRoutes: FastifyPluginAsyncTypebox<ControllerRoutesOptions> = async (
  app,
  { controllers, auth, admin },
) => {
  app.addHook('onRequest', requireSession(auth, { admin }))
  app.get(
    '/',
    {
      schema: {
        tags: ['Controllers'],
        querystring: ListQuerySchema,
        response: { 200: ControllerListEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const page = await controllers.list(request.query)
      return {
        data: page.items.map((c) => ({ ...c, _links: selfLink('controllers', c.id) })),
        meta: {
          pagination: { limit: page.limit, offset: page.offset, totalCount: page.totalCount },
          filterableFields: controllers.filterableFields,
        },
      }
    },
  )
}
