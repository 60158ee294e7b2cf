import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError, fieldError } from '../../errors.js'
import { checkPassword, type PrimaryMethodCheck } from '../../identities/password-login.js'
import type { SessionService } from '../../identities/session-service.js'
import { authenticateExternalJwt, type IdentityLookup } from '../../jwt/authenticate.js'
import { bearerChallenge, bearerToken } from '../../jwt/challenge.js'
import type { SignerKeys } from '../../jwt/signer-keys.js'
import { type ChallengeError, JwtRejected, type VerifyOptions } from '../../jwt/verify.js'
import type { IdentityRecord, IdentityRepository } from '../../store/identity-repository.js'
import type { SessionRecord } from '../../store/session-repository.js'
import { resolveSession } from '../auth-hooks.js'
import { EmptyEnvelopeSchema, errorResponses } from '../common-schemas.js'
import { rateLimit } from '../rate-limit.js'
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
  extJwt: ExtJwtLogin
  /** Requests per second per client address on /authenticate; 0 is off. */
  rateLimit: number
  clock: () => Date
}

/** What JWT login needs: the signers' keys, identity lookups and verification settings. */
export interface ExtJwtLogin {
  keys: SignerKeys
  lookup: IdentityLookup
  verify: VerifyOptions
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
  const { sessions, identities, allowsPrimary, extJwt } = opts
  const tags = ['Authentication']
  const limiter = opts.rateLimit > 0 ? rateLimit(opts.rateLimit, opts.clock) : undefined

  async function loginWithJwt(request: FastifyRequest) {
    const token = bearerToken(request.headers.authorization)
    const challenge = (error: ChallengeError) => ({
      'www-authenticate': bearerChallenge('openziti-primary-ext-jwt', error, extJwt.keys.enabled()),
    })
    if (token === undefined) {
      request.log.info({ reason: 'no bearer token' }, 'ext-jwt login refused')
      throw new AppError('UNAUTHORIZED', { headers: challenge('missing') })
    }
    try {
      return await authenticateExternalJwt(token, extJwt.keys, extJwt.lookup, extJwt.verify)
    } catch (err) {
      if (!(err instanceof JwtRejected)) throw err
      request.log.info(
        { reason: err.reason, signerId: err.signerId, kid: err.kid },
        'ext-jwt login refused',
      )
      throw new AppError('UNAUTHORIZED', { headers: challenge(err.error) })
    }
  }

  app.post(
    '/authenticate',
    {
      ...(limiter ? { onRequest: limiter } : {}),
      // The body is optional (JWT login needs only the Authorization header).
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        tags,
        querystring: AuthenticateQuerySchema,
        body: AuthenticateBodySchema,
        response: { 200: CurrentSessionEnvelopeSchema, ...errorResponses(400, 401, 429) },
      },
    },
    async (request, reply) => {
      if (request.query.method === 'ext-jwt') {
        const { identity, signer, kid } = await loginWithJwt(request)
        const { session, token } = sessions.open(identity, `extJwtId:${signer.id}`, request.ip)
        const seconds = sessions.expirationSeconds(session)
        sessionHeaders(reply, session, seconds)
        reply.header('zt-session', token)
        request.log.info(
          { identityId: identity.id, signerId: signer.id, kid, sessionId: session.id },
          'ext-jwt login',
        )
        return { data: toCurrentSession(session, identity, token, seconds, []), meta: {} }
      }
      if (request.query.method !== 'password') {
        throw new AppError('INVALID_AUTH_METHOD', {
          cause: {
            field: 'method',
            reason: 'supported: password, ext-jwt',
            value: request.query.method,
          },
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
