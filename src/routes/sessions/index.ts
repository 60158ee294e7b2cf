import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { AppError, fieldError } from '../../errors.js'
import { checkPassword, type PrimaryMethodCheck } from '../../identities/password-login.js'
import type { SessionService } from '../../identities/session-service.js'
import type { IdentityRecord, IdentityRepository } from '../../store/identity-repository.js'
import type { SessionRecord } from '../../store/session-repository.js'
import { resolveSession } from '../auth-hooks.js'
import { EmptyEnvelopeSchema, errorResponses } from '../common-schemas.js'
import {
  AuthenticateBodySchema,
  AuthenticateQuerySchema,
  type AuthQuery,
  type CurrentSession,
  CurrentSessionEnvelopeSchema,
} from './schemas.js'

export interface SessionRoutesOptions {
  sessions: SessionService
  identities: IdentityRepository
  allowsPrimary: PrimaryMethodCheck
}

export function toCurrentSession(
  session: SessionRecord,
  identity: IdentityRecord,
  token: string,
  expirationSeconds: number,
  authQueries: AuthQuery[],
): CurrentSession {
  return {
    id: session.id,
    _links: { self: { href: './current-api-session' } },
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    tags: {},
    token,
    identityId: identity.id,
    identity: {
      id: identity.id,
      name: identity.name,
      entity: 'identities',
      _links: { self: { href: `./identities/${identity.id}` } },
    },
    ipAddress: session.ipAddress,
    authenticatorId: session.authenticatorId,
    authQueries,
    configTypes: [],
    isMfaRequired: false,
    isMfaComplete: false,
    isCertExtendable: false,
    lastActivityAt: session.lastActivityAt,
    cachedLastActivityAt: session.lastActivityAt,
    cachedUpdatedAt: session.updatedAt,
    expiresAt: session.expiresAt,
    expirationSeconds,
  }
}

export function sessionHeaders(reply: FastifyReply, session: SessionRecord, seconds: number): void {
  reply.header('expiration-seconds', String(seconds))
  reply.header('expires-at', session.expiresAt)
}

/** Login and the caller's own session; registered under both the client and management APIs. */
const sessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, opts) => {
  const { sessions, identities, allowsPrimary } = opts
  const tags = ['Authentication']

  app.post(
    '/authenticate',
    {
      schema: {
        tags,
        querystring: AuthenticateQuerySchema,
        body: AuthenticateBodySchema,
        response: { 200: CurrentSessionEnvelopeSchema, ...errorResponses(400, 401, 429) },
      },
    },
    async (request, reply) => {
      if (request.query.method !== 'password') {
        throw new AppError('INVALID_AUTH_METHOD', {
          cause: { field: 'method', reason: 'supported: password', value: request.query.method },
        })
      }
      const { username, password } = request.body ?? {}
      if (username === undefined) throw fieldError('COULD_NOT_VALIDATE', 'username', 'is required')
      if (password === undefined) throw fieldError('COULD_NOT_VALIDATE', 'password', 'is required')
      const identity = await checkPassword(identities, username, password, allowsPrimary)
      const { session, token } = sessions.open(identity, 'updb', request.ip)
      const seconds = sessions.expirationSeconds(session)
      sessionHeaders(reply, session, seconds)
      reply.header('zt-session', token)
      request.log.info({ identityId: identity.id, sessionId: session.id }, 'password login')
      return { data: toCurrentSession(session, identity, token, seconds, []), meta: {} }
    },
  )

  app.get(
    '/current-api-session',
    {
      schema: {
        tags,
        response: { 200: CurrentSessionEnvelopeSchema, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const { session, identity } = resolveSession(sessions, request)
      const seconds = sessions.expirationSeconds(session)
      sessionHeaders(reply, session, seconds)
      const token = request.headers['zt-session'] as string // resolveSession checked it
      return { data: toCurrentSession(session, identity, token, seconds, []), meta: {} }
    },
  )

  app.delete(
    '/current-api-session',
    { schema: { tags, response: { 200: EmptyEnvelopeSchema, ...errorResponses(401) } } },
    async (request) => {
      const { session } = resolveSession(sessions, request)
      sessions.end(session.id)
      return { data: {}, meta: {} }
    },
  )
}

export default sessionRoutes
