import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Backups } from '../../backups/backup-module.js'
import { auditContext } from '../audit-events/context.js'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { EmptyEnvelopeSchema, errorResponses } from '../common-schemas.js'
import { IntegrityResultsEnvelopeSchema } from './schemas.js'

/**
 * `/database` (admin only), as OpenZiti's management API has it: `POST /snapshot`
 * (createDatabaseSnapshot), `POST /check-data-integrity` and `GET /data-integrity-results`.
 */
export const databaseRoutes: FastifyPluginAsyncTypebox<{
  backups: Backups
  auth: AuthDeps
}> = async (app, { backups, auth }) => {
  app.addHook('onRequest', requireSession(auth, { admin: true }))
  const tags = ['Database']

  app.post(
    '/snapshot',
    {
      schema: {
        tags,
        summary: 'Writes a consistent copy of the SQLite database to CTRL_SNAPSHOT_DIR',
        response: { 200: EmptyEnvelopeSchema, ...errorResponses(400, 401, 429, 500, 507) },
      },
    },
    async (request) => {
      await backups.snapshots.take(auditContext(request))
      return { data: {}, meta: {} }
    },
  )

  app.post(
    '/check-data-integrity',
    {
      schema: {
        tags,
        summary: 'Starts a data integrity check; its results are read from data-integrity-results',
        response: { 202: EmptyEnvelopeSchema, ...errorResponses(401, 429) },
      },
    },
    async (_request, reply) => {
      backups.integrity.start()
      return reply.code(202).send({ data: {}, meta: {} })
    },
  )

  app.get(
    '/data-integrity-results',
    {
      schema: {
        tags,
        summary: 'The results of the last data integrity check, or of the one in progress',
        response: { 200: IntegrityResultsEnvelopeSchema, ...errorResponses(401) },
      },
    },
    async () => ({ data: backups.integrity.results(), meta: {} }),
  )
}
