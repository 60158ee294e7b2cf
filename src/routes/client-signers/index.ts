import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { SignerService } from '../../signers/signer-service.js'
import { errorResponses, ListQuerySchema } from '../common-schemas.js'
import { ClientSignerListEnvelopeSchema } from '../signers/schemas.js'

/**
 * The unauthenticated signer list: enabled signers with an externalAuthUrl, and nothing more;
 * `filter` and `sort` reach only the fields it shows (id, name).
 */
const clientSignerRoutes: FastifyPluginAsyncTypebox<{ signers: SignerService }> = async (
  app,
  { signers },
) => {
  app.get(
    '/external-jwt-signers',
    {
      schema: {
        tags: ['External JWT Signers'],
        querystring: ListQuerySchema,
        response: { 200: ClientSignerListEnvelopeSchema, ...errorResponses(400) },
      },
    },
    async (request) => {
      return {
        data: (await signers.listForClient(request.query)).map((s) => ({
          ...s,
          _links: { self: { href: `./external-jwt-signers/${s.id}` } },
        })),
        meta: {},
      }
    },
  )
}

export default clientSignerRoutes
