import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { messageOf } from '../../errors.js'
import { ERROR_META, ErrorEnvelopeSchema } from '../common-schemas.js'

const CheckSchema = Type.Object({
  id: Type.String(),
  healthy: Type.Boolean(),
  lastCheckDuration: Type.String(),
  details: Type.Optional(Type.String()),
})

const HealthDataSchema = Type.Object({ healthy: Type.Boolean(), checks: Type.Array(CheckSchema) })

const HealthEnvelopeSchema = Type.Object({ data: HealthDataSchema, meta: Type.Object({}) })

/** A 503 keeps the checks and carries the edge envelope's SERVICE_UNAVAILABLE as well. */
const UnhealthyEnvelopeSchema = Type.Object({
  data: HealthDataSchema,
  error: ErrorEnvelopeSchema.properties.error,
  meta: ErrorEnvelopeSchema.properties.meta,
})

export interface HealthRoutesOptions {
  ping: () => Promise<void>
  /** False once shutdown began: balancers must stop sending new requests here. */
  ready: () => boolean
}

/**
 * `/health-checks` and `/health-checks/ready`: 200 while the store answers and the instance is not
 * shutting down, 503 otherwise. Both answer the same; the second is the path to give balancers.
 */
const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, o) => {
  const schema = {
    tags: ['Health'],
    response: { 200: HealthEnvelopeSchema, 503: UnhealthyEnvelopeSchema },
  }
  for (const path of ['/health-checks', '/health-checks/ready']) {
    app.get(path, { schema }, async (request, reply) => {
      const started = process.hrtime.bigint()
      let storeUp = true
      try {
        await o.ping()
      } catch (err) {
        storeUp = false
        request.log.warn({ err }, 'store health check failed')
      }
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      const ready = o.ready()
      const checks = [
        {
          id: 'store',
          healthy: storeUp,
          lastCheckDuration: `${ms.toFixed(3)}ms`,
          ...(storeUp ? {} : { details: 'the database does not answer' }),
        },
      ]
      // Listed only while it fails: a serving instance answers exactly as before.
      if (!ready) {
        checks.push({
          id: 'accepting',
          healthy: false,
          lastCheckDuration: '0.000ms',
          details: 'shutting down',
        })
      }
      const healthy = storeUp && ready
      const data = { healthy, checks }
      if (healthy) return reply.code(200).send({ data, meta: {} })
      const error = {
        code: 'SERVICE_UNAVAILABLE',
        message: messageOf('SERVICE_UNAVAILABLE'),
        requestId: request.id,
      }
      return reply.code(503).send({ data, error, meta: ERROR_META })
    })
  }
}

export default healthRoutes
