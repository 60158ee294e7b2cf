import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'

const CheckSchema = Type.Object({
  id: Type.String(),
  healthy: Type.Boolean(),
  lastCheckDuration: Type.String(),
  details: Type.Optional(Type.String()),
})

const HealthEnvelopeSchema = Type.Object({
  data: Type.Object({ healthy: Type.Boolean(), checks: Type.Array(CheckSchema) }),
  meta: Type.Object({}),
})

/** Liveness of the store: 200 while it answers a query, 503 when it does not. */
const healthRoutes: FastifyPluginAsyncTypebox<{ ping: () => Promise<void> }> = async (
  app,
  { ping },
) => {
  app.get(
    '/health-checks',
    {
      schema: {
        tags: ['Health'],
        response: { 200: HealthEnvelopeSchema, 503: HealthEnvelopeSchema },
      },
    },
    async (request, reply) => {
      const started = process.hrtime.bigint()
      let healthy = true
      try {
        await ping()
      } catch (err) {
        healthy = false
        request.log.warn({ err }, 'store health check failed')
      }
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      const check = {
        id: 'store',
        healthy,
        lastCheckDuration: `${ms.toFixed(3)}ms`,
        ...(healthy ? {} : { details: 'the database does not answer' }),
      }
      return reply.code(healthy ? 200 : 503).send({ data: { healthy, checks: [check] }, meta: {} })
    },
  )
}

export default healthRoutes
