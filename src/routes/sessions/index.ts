import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError, fieldError } from '../../errors.js'
import type { IdentityRecord } from '../../identities/identity-service.js'
import {
  checkPassword,
  type PasswordLoginDeps,
  refusedAfterCheck,
} from '../../identities/password-login.js'
import type { SessionRecord } from '../../identities/session-service.js'
import { bearerChallenge, bearerTokens } from '../../jwt/challenge.js'
import { JwtRejected, type RefusalKind } from '../../jwt/verify.js'
import type { LoginEvent, LoginMethod } from '../../metrics/login-reasons.js'
import { auditContext } from '../audit-events/context.js'
import {
  type AuthDeps,
  authQueries,
  evaluateSecondary,
  requireSession,
  secondaryChallenge,
  sessionExpiryHeaders,
} from '../auth-hooks.js'
import { EmptyEnvelopeSchema, errorResponses } from '../common-schemas.js'
import { toIdentityDetail } from '../identities/index.js'
import { IdentityDetailEnvelopeSchema } from '../identities/schemas.js'
import { addressKey, clientAddress, type LoginLimiter } from '../rate-limit.js'
import {
  AuthenticateBodySchema,
  AuthenticateQuerySchema,
  type AuthQuery,
  type CurrentSession,
  CurrentSessionEnvelopeSchema,
} from './schemas.js'

export interface SessionRoutesOptions {
  auth: AuthDeps
  passwords: PasswordLoginDeps
  /**
   * The login rate limits, one object shared by the routes of both API prefixes (absent: none).
   */
  limiter?: LoginLimiter | undefined
  clock: () => Date
  /** Told the outcome of every password or ext-jwt login attempt (metrics). */
  onLogin?: ((event: LoginEvent) => void) | undefined
}

export function toCurrentSession(
  session: SessionRecord,
  identity: IdentityRecord,
  token: string,
  expirationSeconds: number,
  queries: AuthQuery[],
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
    authQueries: queries,
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

/** Login, the caller's own session and identity; registered under the client and management APIs. */
/** A password login's client as its lockout counts it: the address the login limits key. */
const loginAddress = (request: FastifyRequest): string => addressKey(clientAddress(request))

const sessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, opts) => {
  const { auth, passwords } = opts
  const { sessions, verifier } = auth
  const tags = ['Authentication']
  const { limiter } = opts
  const { onLogin } = opts
  // Why a JWT was refused, for the login count: the 401 the client gets no longer says.
  const refusals = new WeakMap<FastifyRequest, RefusalKind>()
  const loginMethod = (request: FastifyRequest): LoginMethod | undefined => {
    const { method } = request.query as { method?: unknown } // parsed, maybe not yet validated
    return method === 'password' || method === 'ext-jwt' ? method : undefined
  }

  async function primaryJwt(request: FastifyRequest) {
    const tokens = bearerTokens(request.raw.rawHeaders)
    try {
      return await verifier.authenticate(tokens)
    } catch (err) {
      if (!(err instanceof JwtRejected)) throw err
      refusals.set(request, err.kind)
      request.log.info(
        { kind: err.kind, reason: err.reason, signerId: err.signerId, kid: err.kid },
        'ext-jwt login refused',
      )
      throw jwtUnauthorized(err.error)
    }
  }

  /** A JWT login's 401: UNAUTHORIZED with the primary challenge naming the enabled signers. */
  function jwtUnauthorized(error: JwtRejected['error']): AppError {
    // As upstream: with no signer enabled there is nothing to name, and no challenge.
    const enabled = verifier.keys.enabled()
    if (enabled.length === 0) return new AppError('UNAUTHORIZED')
    const challenge = bearerChallenge('openziti-primary-ext-jwt', error, enabled)
    return new AppError('UNAUTHORIZED', { headers: { 'www-authenticate': challenge } })
  }

  async function passwordLogin(
    body: { username?: string; password?: string },
    requestId: string,
    address: string,
  ) {
    const { username, password } = body
    if (username === undefined) throw fieldError('COULD_NOT_VALIDATE', 'username', 'is required')
    if (password === undefined) throw fieldError('COULD_NOT_VALIDATE', 'password', 'is required')
    const { identity, hash } = await checkPassword(
      passwords,
      username,
      password,
      requestId,
      address,
      () => limiter?.identity(`name:${username}`), // after the backoff, before any hashing
    )
    return { identity, authenticatorId: 'updb', passwordHash: hash }
  }

  app.post(
    '/authenticate',
    {
      ...(limiter
        ? { onRequest: async (request: FastifyRequest) => limiter.address(clientAddress(request)) }
        : {}),
      // Every refusal passes here, those before the handler (rate limit, validation) included.
      ...(onLogin
        ? {
            onError: async (request: FastifyRequest, _reply: FastifyReply, error: unknown) => {
              const method = loginMethod(request)
              if (method) onLogin({ method, ok: false, error, refusal: refusals.get(request) })
            },
          }
        : {}),
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
      const { method } = request.query
      if (method !== 'password' && method !== 'ext-jwt') {
        throw new AppError('INVALID_AUTH_METHOD', {
          cause: { field: 'method', reason: 'supported: password, ext-jwt', value: method },
        })
      }
      const { identity, authenticatorId, endsAt, passwordHash } =
        method === 'ext-jwt'
          ? await primaryJwt(request).then((a) => {
              limiter?.identity(`id:${a.identity.id}`)
              return {
                identity: a.identity,
                authenticatorId: `extJwtId:${a.signer.id}`,
                endsAt: a.sessionEndsAt,
                passwordHash: undefined,
              }
            })
          : {
              ...(await passwordLogin(request.body, request.id, loginAddress(request))),
              endsAt: undefined,
            }
      const secondary = await evaluateSecondary(auth, request, identity)
      const { session, token } = await sessions
        .open(
          identity,
          authenticatorId,
          clientAddress(request) ?? request.ip,
          auditContext(request),
          endsAt,
          passwordHash,
        )
        .catch(async (err: unknown) => {
          // Refused by the store: the identity changed after the login's check (see `open`).
          if (err instanceof AppError && err.code === 'INVALID_AUTH') {
            if (passwordHash === undefined) {
              refusals.set(request, 'identity_disabled')
              request.log.info(
                { kind: 'identity_disabled', identityId: identity.id },
                'ext-jwt login refused: the identity was disabled or deleted as it was stored',
              )
              // The answer of any other refused JWT login, as for a disabled identity known so.
              throw jwtUnauthorized('invalid')
            } else {
              const { username } = request.body as { username: string } // checked by passwordLogin
              const address = loginAddress(request)
              await refusedAfterCheck(passwords, username, identity, request.id, address)
            }
          }
          throw err
        })
      const seconds = sessions.expirationSeconds(session)
      reply.headers(sessionExpiryHeaders(sessions, session))
      reply.header('zt-session', token)
      reply.header('cache-control', 'no-store') // the answer holds the session's token
      for (const [name, value] of Object.entries(secondaryChallenge(secondary)))
        reply.header(name, value)
      onLogin?.({ method, ok: true })
      return {
        data: toCurrentSession(session, identity, token, seconds, authQueries(secondary)),
        meta: {},
      }
    },
  )

  app.get(
    '/current-api-session',
    {
      onRequest: requireSession(auth, { admin: false, partial: true }),
      schema: { tags, response: { 200: CurrentSessionEnvelopeSchema, ...errorResponses(401) } },
    },
    async (request, reply) => {
      const { session, identity, token, secondary } = request.auth as NonNullable<
        FastifyRequest['auth']
      > // set by the hook
      const seconds = sessions.expirationSeconds(session)
      reply.header('cache-control', 'no-store') // the answer holds the session's token
      return {
        data: toCurrentSession(session, identity, token, seconds, authQueries(secondary)),
        meta: {},
      }
    },
  )

  app.delete(
    '/current-api-session',
    {
      onRequest: requireSession(auth, { admin: false, partial: true }),
      schema: { tags, response: { 200: EmptyEnvelopeSchema, ...errorResponses(401) } },
    },
    async (request) => {
      const { session } = request.auth as NonNullable<FastifyRequest['auth']> // set by the hook
      await sessions.end(session.id, auditContext(request))
      return { data: {}, meta: {} }
    },
  )

  app.get(
    '/current-identity',
    {
      onRequest: requireSession(auth, { admin: false }),
      schema: {
        tags,
        response: { 200: IdentityDetailEnvelopeSchema, ...errorResponses(401) },
      },
    },
    async (request) => {
      const { identity } = request.auth as NonNullable<FastifyRequest['auth']> // set by the hook
      // The identity as `GET identities/{id}` shows it (the edge API's `identityDetail`); it has
      // a session: this one.
      const kept = auth.keptPolicyOf?.(identity)
      const policy = kept ? kept.policy : await auth.policyOf(identity)
      return { data: toIdentityDetail(identity, policy?.name ?? '', true), meta: {} }
    },
  )
}

export default sessionRoutes
