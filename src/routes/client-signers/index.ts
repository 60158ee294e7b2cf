import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { SignerService } from '../../signers/signer-service.js'
import { errorResponses, ListQuerySchema } from '../common-schemas.js'
import { notModified, ResponseCache, tagged } from '../response-cache.js'
import { ClientSignerListEnvelopeSchema } from '../signers/schemas.js'

/**
 * The unauthenticated signer list: enabled signers with an externalAuthUrl, and nothing more;
 * `filter` and `sort` reach only the fields it shows (id, name). Every client calls it before it
 * logs in, so answers are kept serialised until a signer changes (here or on another instance),
 * carry an ETag, and `If-None-Match` with the current tag answers 304 without a body.
 */
const clientSignerRoutes: FastifyPluginAsyncTypebox<{ signers: SignerService }> = async (
  app,
  { signers },
) => {
  const cache = new ResponseCache()
  signers.onListChange(() => cache.clear())

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
      const q = request.query
      const build = async () =>
        JSON.stringify({
          data: (await signers.listForClient(q)).map((s) => ({
            id: s.id,
            name: s.name,
            externalAuthUrl: s.externalAuthUrl,
            _links: { self: { href: `./external-jwt-signers/${s.id}` } },
          })),
          meta: {},
        })
      const version = await signers.listVersion()
      const key = `${q.filter}\u0000${q.sort}\u0000${q.limit}\u0000${q.offset}`
      const { body, etag } =
        version === undefined ? tagged(await build()) : await cache.get(key, version, build)
      reply.header('etag', etag)
      if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send()
      return reply.type('application/json; charset=utf-8').send(body)
    },
  )
}

export default clientSignerRoutes
