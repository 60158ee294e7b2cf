import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'
import type { IdentityRecord } from '../identities/identity-service.js'
import type {
  ResolvedSession,
  SessionRecord,
  SessionService,
} from '../identities/session-service.js'
import type { ExternalJwtVerifier, SecondaryResult } from '../jwt/authenticate.js'
import { bearerCandidates, bearerChallenge, bearerTokens } from '../jwt/challenge.js'
import type { AuthPolicyRecord } from '../policies/auth-policy-service.js'
import { ConnectionKeys } from './connection-keys.js'
import type { AuthQuery } from './sessions/schemas.js'

/** The caller's session, its token, and whether this request met the secondary factor. */
export interface RequestAuth extends ResolvedSession {
  token: string
  secondary: SecondaryResult
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's session, once an auth hook has resolved it. */
    auth: RequestAuth | null
  }
}

/** `request.auth` on every request: null until a route's auth hook resolves the caller's session. */
export const authentication = fp(
  async (app) => {
    app.decorateRequest('auth', null)
  },
  { name: 'authentication' },
)

/** What the auth hooks need: sessions, the JWT verifier and each identity's policy. */
export interface AuthDeps {
  sessions: SessionService
  verifier: ExternalJwtVerifier
  policyOf: (identity: IdentityRecord) => Promise<AuthPolicyRecord | undefined>
  /** An identity's policy when known without a read (see AuthPolicyService.keptPolicyOf). */
  keptPolicyOf?:
    | ((identity: IdentityRecord) => { policy: AuthPolicyRecord | undefined } | undefined)
    | undefined
  /** Told the outcome of every secondary-factor check (metrics). */
  onSecondary?: ((result: SecondaryResult) => void) | undefined
}

// No session at all: OpenZiti's controller names both of its session kinds, the legacy zt-session
// and its OIDC bearer token, in one header, as its clients expect (two challenges).
const MISSING =
  'zt-session realm="zt-session" error="missing" error_description="no matching token was provided",' +
  'Bearer realm="openziti-oidc" error="missing" error_description="no matching token was provided"'
const INVALID = 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"'

function sessionHeader(request: FastifyRequest): string | undefined {
  const value = request.headers['zt-session']
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** The cache key of each connection's repeated bearer token. */
const connectionKeys = new ConnectionKeys()

/** Evaluates the identity's secondary factor against the request's bearer tokens. */
export async function evaluateSecondary(
  deps: AuthDeps,
  request: FastifyRequest,
  identity: IdentityRecord,
): Promise<SecondaryResult> {
  // Known without a read on almost every request: no promise to wait for then.
  const kept = deps.keptPolicyOf?.(identity)
  const policy = kept ? kept.policy : await deps.policyOf(identity)
  const required = policy?.requireExtJwtSigner
  if (!required) return { met: true }
  const headers = request.raw.rawHeaders
  const result =
    deps.verifier.secondaryKept(bearerCandidates(headers), identity, required, (token) =>
      connectionKeys.key(request.raw.socket, token),
    ) ?? (await deps.verifier.secondary(bearerTokens(headers), identity, required))
  deps.onSecondary?.(result)
  if (!result.met) {
    request.log.info(
      {
        kind: result.kind,
        reason: result.reason,
        signerId: result.signer.id,
        identityId: identity.id,
      },
      'secondary ext-jwt not met',
    )
  }
  return result
}

/** The auth query a client must answer while the secondary factor is unmet. */
export function authQueries(secondary: SecondaryResult): AuthQuery[] {
  if (secondary.met) return []
  const { signer } = secondary
  return [
    {
      typeId: 'EXT-JWT',
      provider: 'url',
      id: signer.id,
      ...(signer.externalAuthUrl ? { httpUrl: signer.externalAuthUrl } : {}),
      ...(signer.clientId ? { clientId: signer.clientId } : {}),
      ...(signer.scopes ? { scopes: signer.scopes } : {}),
    },
  ]
}

export function secondaryChallenge(secondary: SecondaryResult): Record<string, string> {
  if (secondary.met) return {}
  return {
    'www-authenticate': bearerChallenge('openziti-secondary-ext-jwt', secondary.error, [
      secondary.signer,
    ]),
  }
}

/** Resolves the caller's session; a missing or dead one is a 401 with a zt-session challenge. */
export async function resolveRequestAuth(
  deps: AuthDeps,
  request: FastifyRequest,
): Promise<RequestAuth> {
  const token = sessionHeader(request)
  if (token === undefined) {
    throw new AppError('UNAUTHORIZED', { headers: { 'www-authenticate': MISSING } })
  }
  const resolved = await deps.sessions.resolve(token)
  if (!resolved) throw new AppError('UNAUTHORIZED', { headers: { 'www-authenticate': INVALID } })
  // Built field by field: a spread of `resolved` with two more fields takes V8's slow path for
  // object literals, a few per cent of a kept list's time.
  const auth: RequestAuth = {
    session: resolved.session,
    identity: resolved.identity,
    token,
    secondary: await evaluateSecondary(deps, request, resolved.identity),
  }
  request.auth = auth
  return auth
}

/**
 * The headers every response to a resolved session carries, as OpenZiti's controller sends them:
 * the seconds left until the session expires, and when that is.
 */
export function sessionExpiryHeaders(
  sessions: AuthDeps['sessions'],
  session: SessionRecord,
): { 'expiration-seconds': string; 'expires-at': string } {
  return {
    'expiration-seconds': String(sessions.expirationSeconds(session)),
    'expires-at': session.expiresAt,
  }
}

/**
 * Whether `requireSession(deps, { admin: true })` would admit a request, decided from memory
 * alone, for a lane (./lanes.ts): a kept live session of an enabled admin, no sliding expiry due,
 * whose policy, kept too, asks for no secondary factor. Then the session's expiry headers, which
 * the lane sends as the hook would; undefined whenever any of it is not known without a read: the
 * hook then decides, and may refuse.
 */
export function admitsKeptAdmin(
  deps: AuthDeps,
  headers: IncomingHttpHeaders,
): ReturnType<typeof sessionExpiryHeaders> | undefined {
  const token = headers['zt-session']
  if (typeof token !== 'string' || token === '') return undefined
  const resolved = deps.sessions.keptSession(token)
  if (!resolved?.identity.isAdmin) return undefined
  const kept = deps.keptPolicyOf?.(resolved.identity)
  if (kept === undefined || kept.policy?.requireExtJwtSigner) return undefined
  return sessionExpiryHeaders(deps.sessions, resolved.session)
}

/**
 * An onRequest hook that admits live sessions: fully authenticated ones (secondary factor met on
 * this very request) unless `partial`, and of admins only when `admin`.
 */
export function requireSession(
  deps: AuthDeps,
  options: { admin: boolean; partial?: boolean },
): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const { session, identity, secondary } = await resolveRequestAuth(deps, request)
    reply.headers(sessionExpiryHeaders(deps.sessions, session))
    if (!options.partial && !secondary.met) {
      throw new AppError('UNAUTHORIZED', {
        headers: secondaryChallenge(secondary),
        cause: {
          field: 'authorization',
          reason: 'this session needs a valid external JWT on every call',
        },
      })
    }
    if (options.admin && !identity.isAdmin) {
      throw new AppError('UNAUTHORIZED', {
        cause: { field: 'zt-session', reason: 'this route needs an admin identity' },
      })
    }
  }
}
