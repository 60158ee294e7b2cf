import swagger from '@fastify/swagger'
import fp from 'fastify-plugin'

/** Collects every route schema registered after it; the document is served at `/openapi.yaml`. */
export const openapi = fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'External JWT signer controller',
          description: 'Edge management and client APIs for external JWT signers',
          version: '0.1.0',
        },
      },
    })
    app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('application/yaml').send(app.swagger({ yaml: true })),
    )
  },
  { name: 'openapi' },
)
