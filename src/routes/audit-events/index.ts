import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuditService } from '../../audit/audit-service.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { errorResponses, ListQuerySchema } from '../common-schemas.js'
import { AuditEventListEnvelopeSchema } from './schemas.js'

/** `GET /audit-events`: the audit trail, newest first, with the list machinery (admin only). */
export const auditEventRoutes: FastifyPluginAsyncTypebox<{
  audit: Pick<AuditService, 'list' | 'filterableFields'>
  auth: AuthDeps
}> = async (app, { audit, auth }) => {
  app.addHook('onRequest', requireSession(auth, { admin: true }))
  app.get(
    '/',
    {
      schema: {
        tags: ['Audit Events'],
        querystring: ListQuerySchema,
        response: { 200: AuditEventListEnvelopeSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      const page = await audit.list(request.query)
      return {
        data: page.items,
        meta: {
          pagination: { limit: page.limit, offset: page.offset, totalCount: page.totalCount },
          filterableFields: audit.filterableFields,
        },
      }
    },
  )
}
