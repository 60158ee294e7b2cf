import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { onRequestAsyncHookHandler } from 'fastify'
import type { TokenExplanation } from '../../jwt/explain.js'
import { errorResponses } from '../common-schemas.js'
import {
  DiscoverBodySchema,
  DiscoverEnvelopeSchema,
  type DiscoveredSigner,
  VerifyTokenBodySchema,
  VerifyTokenEnvelopeSchema,
} from './tools-schemas.js'

export interface SignerToolsOptions {
  auth: onRequestAsyncHookHandler
  /** Proposes a signer from an issuer's OpenID discovery document. */
  discover: (issuer: string) => Promise<DiscoveredSigner>
  /** Runs every check of JWT login on a token without logging in. */
  explain: (token: string) => Promise<TokenExplanation>
}

/**
 * Operator tools beside a signer collection (admin only): set-up from OpenID discovery, and why a
 * token is accepted or refused. These are
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

  app.post(
    '/verify-token',
    {
      schema: {
        tags,
        summary: 'Explain what JWT login makes of a token, without logging in',
        body: VerifyTokenBodySchema,
        response: { 200: VerifyTokenEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const data = await o.explain(request.body.token)
      const { accepted, kind, reason, signerId, kid, rule } = data
      request.log.info({ accepted, kind, reason, signerId, kid, rule }, 'token explained')
      return { data, meta: {} }
    },
  )
}
