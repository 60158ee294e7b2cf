import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { SessionService } from '../../identities/session-service.js'
import type { SignerService } from '../../signers/signer-service.js'
import { SIGNER_LIST_SPEC, type SignerRecord } from '../../store/signer-repository.js'
import { requireSession } from '../auth-hooks.js'
import {
  CreateEnvelopeSchema,
  EmptyEnvelopeSchema,
  errorResponses,
  IdParamsSchema,
  ListQuerySchema,
} from '../common-schemas.js'
import {
  SignerBodySchema,
  type SignerDetail,
  SignerDetailEnvelopeSchema,
  SignerListEnvelopeSchema,
  SignerPatchSchema,
} from './schemas.js'

export interface SignerRoutesOptions {
  signers: SignerService
  sessions: SessionService
}

const selfLink = (id: string) => ({ self: { href: `./external-jwt-signers/${id}` } })
const FILTERABLE = Object.keys(SIGNER_LIST_SPEC.filterable)

export function toSignerDetail(s: SignerRecord): SignerDetail {
  return {
    id: s.id,
    _links: selfLink(s.id),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: s.tags,
    name: s.name,
    enabled: s.enabled,
    issuer: s.issuer,
    audience: s.audience,
    jwksEndpoint: s.jwksEndpoint,
    certPem: s.certPem,
    kid: s.kid,
    claimsProperty: s.claimsProperty,
    useExternalId: s.useExternalId,
    externalAuthUrl: s.externalAuthUrl,
    clientId: s.clientId,
    scopes: s.scopes,
    targetToken: s.targetToken,
    commonName: s.commonName ?? '',
    fingerprint: s.fingerprint,
    notBefore: s.notBefore,
    notAfter: s.notAfter,
  }
}

/** Management API of external JWT signers (admin session required). */
const signerRoutes: FastifyPluginAsyncTypebox<SignerRoutesOptions> = async (app, opts) => {
  const { signers, sessions } = opts
  app.addHook('onRequest', requireSession(sessions, { admin: true }))
  const tags = ['External JWT Signers']

  app.post(
    '/',
    {
      schema: {
        tags,
        body: SignerBodySchema,
        response: { 201: CreateEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const signer = signers.create(request.body)
      return reply
        .code(201)
        .send({ data: { id: signer.id, _links: selfLink(signer.id) }, meta: {} })
    },
  )

  app.get(
    '/',
    {
      schema: {
        tags,
        querystring: ListQuerySchema,
        response: { 200: SignerListEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const page = signers.list(request.query)
      return {
        data: page.items.map(toSignerDetail),
        meta: {
          pagination: { limit: page.limit, offset: page.offset, totalCount: page.totalCount },
          filterableFields: FILTERABLE,
        },
      }
    },
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        params: IdParamsSchema,
        response: { 200: SignerDetailEnvelopeSchema, ...errorResponses(401, 404) },
      },
    },
    async (request) => ({ data: toSignerDetail(signers.get(request.params.id)), meta: {} }),
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        params: IdParamsSchema,
        body: SignerBodySchema,
        response: { 200: EmptyEnvelopeSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => {
      signers.replace(request.params.id, request.body)
      return { data: {}, meta: {} }
    },
  )

  app.patch(
    '/:id',
    {
      schema: {
        tags,
        params: IdParamsSchema,
        body: SignerPatchSchema,
        response: { 200: EmptyEnvelopeSchema, ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => {
      signers.patch(request.params.id, request.body)
      return { data: {}, meta: {} }
    },
  )

  app.delete(
    '/:id',
    {
      schema: {
        tags,
        params: IdParamsSchema,
        response: { 200: EmptyEnvelopeSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (request) => {
      signers.delete(request.params.id)
      return { data: {}, meta: {} }
    },
  )
}

export default signerRoutes
