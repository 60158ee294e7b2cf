import type { FastifyRequest } from 'fastify'
import type { AuditContext } from '../../audit/audit-service.js'

/** Who asks for a change in this request: the session's identity (if any) and the request id. */
export function auditContext(request: FastifyRequest): AuditContext {
  const identity = request.auth?.identity
  return {
    actor: identity ? { id: identity.id, name: identity.name } : null,
    requestId: request.id,
  }
}
