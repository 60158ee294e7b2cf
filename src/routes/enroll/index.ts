import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import {
  type EnrollmentReason,
  EnrollmentRefused,
  type TokenEnrollment,
} from '../../enrollment/token-enrollment.js'
import { bearerTokens } from '../../jwt/challenge.js'
import { errorResponses } from '../common-schemas.js'
import { clientAddress, type LoginLimiter } from '../rate-limit.js'
import {
  EnrollmentCertsEnvelopeSchema,
  EnrollTokenHeadersSchema,
  TokenEnrollmentBodySchema,
} from './schemas.js'

export interface EnrollRoutesOptions {
  enrollment: TokenEnrollment
  /** The PEM trust bundle `/.well-known/est/cacerts` offers (HTTPS), sent as `ca`. */
  trustBundlePem?: string | undefined
  /** The login limiter: an enrollment counts against the client address's login allowance. */
  limiter?: LoginLimiter | undefined
  /** Told every attempt's outcome (metrics). */
  onEnroll?: ((method: 'token' | 'cert', reason: EnrollmentReason) => void) | undefined
}

/** `POST /enroll/token` (no session): JWT enrollment, answered as OpenZiti answers it. */
const enrollRoutes: FastifyPluginAsyncTypebox<EnrollRoutesOptions> = async (app, o) => {
  const outcomes = new WeakMap<FastifyRequest, EnrollmentReason>()
  const methodOf = (request: FastifyRequest) => {
    const body = request.body as { clientCsr?: unknown } | undefined // maybe not yet validated
    return typeof body?.clientCsr === 'string' ? 'cert' : 'token'
  }

  app.post(
    '/enroll/token',
    {
      onRequest: async (request) => o.limiter?.address(clientAddress(request)),
      // Every refusal passes here, those before the handler (rate limit, validation) included.
      onError: async (request: FastifyRequest, _reply: FastifyReply, error: unknown) => {
        const status = (error as { statusCode?: number }).statusCode ?? 500 // AppError or Fastify's
        const reason =
          outcomes.get(request) ??
          (status === 429 ? 'rate_limited' : status < 500 ? 'malformed' : 'error')
        o.onEnroll?.(methodOf(request), reason)
      },
      // The body is optional: a token enrollment needs only the Authorization header.
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        tags: ['Enrollment'],
        headers: EnrollTokenHeadersSchema,
        body: TokenEnrollmentBodySchema,
        response: { 200: EnrollmentCertsEnvelopeSchema, ...errorResponses(400, 409, 429) },
      },
    },
    async (request) => {
      try {
        const result = await o.enrollment.enroll({
          tokens: bearerTokens(request.raw.rawHeaders),
          issuerId: request.headers['ziti-token-issuer-id'],
          csrPem: request.body.clientCsr,
          requestId: request.id,
        })
        o.onEnroll?.(result.certificate ? 'cert' : 'token', 'none')
        const ca = o.trustBundlePem
        return {
          data: {
            ...(result.certificate ? { cert: result.certificate.chainPem } : {}),
            ...(ca ? { ca } : {}),
            controllers: result.controllers,
          },
          meta: {},
        }
      } catch (err) {
        if (!(err instanceof EnrollmentRefused)) throw err
        outcomes.set(request, err.kind)
        request.log.info(
          { kind: err.kind, reason: err.reason, signerId: err.signerId },
          'enrollment refused',
        )
        throw err.error
      }
    },
  )
}

export default enrollRoutes
