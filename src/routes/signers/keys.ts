import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { SignerKeyStatus } from '../../jwt/signer-keys.js'
import { notFound } from '../../resources.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { errorResponses, IdParamsSchema } from '../common-schemas.js'
import { SignerKeyStatusEnvelopeSchema } from './schemas.js'

/** What the key routes need of the signers' key material. */
export interface SignerKeySource {
  status(signerId: string): SignerKeyStatus | undefined
  refresh(signerId: string): Promise<SignerKeyStatus | undefined>
}

/**
 * `GET /{id}/keys` (the signer's kids and JWKS freshness on this instance) and
 * `POST /{id}/refresh-keys` (fetch the JWKS now, whatever the cooldown; answered once the fetch
 * ended, its failure shown in `lastFetchError`). Admin session required.
 */
export const signerKeyRoutes: FastifyPluginAsyncTypebox<{
  keys: SignerKeySource
  auth: AuthDeps
}> = async (app, { keys, auth }) => {
  app.addHook('onRequest', requireSession(auth, { admin: true }))
  const schema = {
    tags: ['External JWT Signers'],
    params: IdParamsSchema,
    response: { 200: SignerKeyStatusEnvelopeSchema, ...errorResponses(401, 404) },
  }

  app.get('/:id/keys', { schema }, async (request) => {
    const status = keys.status(request.params.id)
    if (!status) throw notFound('signer', request.params.id)
    return { data: status, meta: {} }
  })

  app.post('/:id/refresh-keys', { schema }, async (request) => {
    const status = await keys.refresh(request.params.id)
    if (!status) throw notFound('signer', request.params.id)
    return { data: status, meta: {} }
  })
}
