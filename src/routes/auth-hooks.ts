import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { AppError } from '../errors.js'
import type { ResolvedSession, SessionService } from '../identities/session-service.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's session, once an auth hook has resolved it. */
    auth: ResolvedSession | null
  }
}

const MISSING =
  'zt-session realm="zt-session" error="missing" error_description="no matching token was provided"'
const INVALID = 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"'

export function sessionHeader(request: FastifyRequest): string | undefined {
  const value = request.headers['zt-session']
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** Resolves the caller's session; a missing or dead one is a 401 with a zt-session challenge. */
export function resolveSession(sessions: SessionService, request: FastifyRequest): ResolvedSession {
  const token = sessionHeader(request)
  if (token === undefined) {
    throw new AppError('UNAUTHORIZED', { headers: { 'www-authenticate': MISSING } })
  }
  const resolved = sessions.resolve(token)
  if (!resolved) {
    throw new AppError('UNAUTHORIZED', { headers: { 'www-authenticate': INVALID } })
  }
  request.auth = resolved
  return resolved
}

/** An onRequest hook that admits only live sessions, of admins when `admin` is set. */
export function requireSession(
  sessions: SessionService,
  options: { admin: boolean },
): onRequestAsyncHookHandler {
  return async (request) => {
    const { identity } = resolveSession(sessions, request)
    if (options.admin && !identity.isAdmin) {
      throw new AppError('UNAUTHORIZED', {
        cause: { field: 'zt-session', reason: 'this route needs an admin identity' },
      })
    }
  }
}
