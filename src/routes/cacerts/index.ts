import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AppError } from '../../errors.js'
import { ErrorEnvelopeSchema } from '../common-schemas.js'

export interface CaCertsRoutesOptions {
  /** The chain of the API as base64 PKCS#7 (see `pkcs7CertsOnly`); undefined over plain HTTP. */
  pkcs7: string | undefined
}

/**
 * EST's `/.well-known/est/cacerts` (RFC 7030 4.1), without authentication: the chain a client needs
 * to trust the API, so that `ziti edge login host:port` can offer to trust it on first use.
 */
const caCertsRoutes: FastifyPluginAsyncTypebox<CaCertsRoutesOptions> = async (app, { pkcs7 }) => {
  app.get(
    '/.well-known/est/cacerts',
    {
      schema: {
        tags: ['Informational'],
        response: {
          200: {
            description: 'base64 DER of a PKCS#7 certs-only SignedData',
            content: { 'application/pkcs7-mime': { schema: Type.String() } },
          },
          404: {
            description: 'Not served over plain HTTP',
            content: { 'application/json': { schema: ErrorEnvelopeSchema } },
          },
        },
      },
    },
    async (_request, reply) => {
      // Over plain HTTP there is no chain to offer: the path does not exist.
      if (pkcs7 === undefined) throw new AppError('NOT_FOUND')
      return reply
        .type('application/pkcs7-mime')
        .header('content-transfer-encoding', 'base64')
        .send(pkcs7)
    },
  )
}

export default caCertsRoutes
