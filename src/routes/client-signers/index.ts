import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { SignerService } from '../../signers/signer-service.js'
import { errorResponses } from '../common-schemas.js'
import { ClientSignerListEnvelopeSchema } from '../signers/schemas.js'

const PageQuerySchema = Type.Object({
  limit: Type.Optional(Type.String({ maxLength: 20 })),
  offset: Type.Optional(Type.String({ maxLength: 20 })),
})

/** The unauthenticated signer list: enabled signers with an externalAuthUrl, and nothing more. */
const clientSignerRoutes: FastifyPluginAsyncTypebox<{ signers: SignerService }> = async (
  app,
  { signers },
) => {
  app.get(
    '/external-jwt-signers',
    {
      schema: {
        tags: ['External JWT Signers'],
        querystring: PageQuerySchema,
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
