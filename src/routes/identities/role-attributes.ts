import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { IdentityService } from '../../identities/identity-service.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { errorResponses, ListMetaSchema, ListQuerySchema } from '../common-schemas.js'

/** OpenZiti's `listRoleAttributesEnvelope`: the attribute names, with the list meta. */
export const RoleAttributeListEnvelopeSchema = Type.Object({
  data: Type.Array(Type.String()),
  meta: ListMetaSchema,
})

/**
 * `GET /identity-role-attributes` (OpenZiti's `listRoleAttributes`): the distinct role attributes
 * of identities, filtered, sorted and paged by `id` (the attribute itself). Admin only; the
 * console fills its attribute pickers from it.
 */
export const identityRoleAttributeRoutes: FastifyPluginAsyncTypebox<{
  identities: Pick<IdentityService, 'roleAttributes'>
  auth: AuthDeps
}> = async (app, { identities, auth }) => {
  app.addHook('onRequest', requireSession(auth, { admin: true }))
  app.get(
    '/',
    {
      schema: {
        tags: ['Identities'],
        querystring: ListQuerySchema,
        response: { 200: RoleAttributeListEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const page = await identities.roleAttributes(request.query)
      return {
        data: page.items,
        meta: {
          pagination: { limit: page.limit, offset: page.offset, totalCount: page.totalCount },
          filterableFields: ['id'],
        },
      }
    },
  )
}
