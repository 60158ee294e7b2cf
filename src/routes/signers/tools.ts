import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { onRequestAsyncHookHandler } from 'fastify'
import { errorResponses } from '../common-schemas.js'
import {
  DiscoverBodySchema,
  DiscoverEnvelopeSchema,
  type DiscoveredSigner,
} from './tools-schemas.js'

export interface SignerToolsOptions {
  auth: onRequestAsyncHookHandler
  /** Proposes a signer from an issuer's OpenID discovery document. */
  discover: (issuer: string) => Promise<DiscoveredSigner>
}

/**
 * Operator tools beside a signer collection (admin only): set-up from OpenID discovery. These are
 * static paths, which the router matches before the collection's `/:id`.
 */
export const signerToolRoutes: FastifyPluginAsyncTypebox<SignerToolsOptions> = async (app, o) => {
  app.addHook('onRequest', o.auth)
  const tags = ['External JWT Signers']

  app.post(
    '/discover',
    {
      schema: {
        tags,
        summary: 'Propose a signer from the issuer OpenID discovery document (creates nothing)',
        body: DiscoverBodySchema,
        response: { 200: DiscoverEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => ({ data: await o.discover(request.body.issuer), meta: {} }),
  )
}
