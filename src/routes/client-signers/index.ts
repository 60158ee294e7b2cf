import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError } from '../../errors.js'
import { errorResponses, IdParamsSchema, ListQuerySchema } from '../common-schemas.js'
import { notModified } from '../response-cache.js'
import { ClientSignerEnvelopeSchema, ClientSignerListEnvelopeSchema } from '../signers/schemas.js'
import type { ClientSignerPages } from './pages.js'

/**
 * The unauthenticated signer list: enabled signers with an externalAuthUrl, and nothing more;
 * `filter` and `sort` reach only the fields it shows (id, name). Every client calls it before it
 * logs in, so answers are kept serialised until a signer changes (here or on another instance),
 * carry an ETag, and `If-None-Match` with the current tag answers 304 without a body. The default
 * page, once kept, is mostly answered before Fastify (see `../lanes.ts`); this route answers the rest.
 */
const clientSignerRoutes: FastifyPluginAsyncTypebox<{ pages: ClientSignerPages }> = async (
  app,
  { pages },
) => {
  app.get(
    '/external-jwt-signers',
    {
      schema: {
        tags: ['External JWT Signers'],
        querystring: ListQuerySchema,
        response: { 200: ClientSignerListEnvelopeSchema, 304: {}, ...errorResponses(400) },
      },
    },
    async (request, reply) => {
      const { body, etag } = await pages.page(request.query)
      reply.header('etag', etag)
      if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send()
      return reply.type('application/json; charset=utf-8').send(body)
    },
  )

  // Where each item's `_links.self.href` (`./external-jwt-signers/<id>`, relative to the list)
  // leads: the same item, unauthenticated too; 404 for a signer the list does not show.
  app.get(
    '/external-jwt-signers/:id',
    {
      schema: {
        tags: ['External JWT Signers'],
        params: IdParamsSchema,
        response: { 200: ClientSignerEnvelopeSchema, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const detail = await pages.one(request.params.id)
      if (detail === undefined) throw new AppError('NOT_FOUND')
      return detail
    },
  )
}

export default clientSignerRoutes
