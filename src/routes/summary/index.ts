import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { type AuthDeps, requireSession } from '../auth-hooks.js'
import { EmptyMetaSchema, errorResponses } from '../common-schemas.js'

/** OpenZiti's `listSummaryCounts`, with the entities this controller holds. */
export const SummaryCountsSchema = Type.Object({
  identities: Type.Integer(),
  externalJwtSigners: Type.Integer(),
  authPolicies: Type.Integer(),
  apiSessions: Type.Integer(),
})
export type SummaryCounts = typeof SummaryCountsSchema.static

/** `GET /summary` (OpenZiti's `listSummaryCounts`): the dashboard's counts. Admin only. */
export const summaryRoutes: FastifyPluginAsyncTypebox<{
  counts: () => Promise<SummaryCounts>
  auth: AuthDeps
}> = async (app, { counts, auth }) => {
  app.addHook('onRequest', requireSession(auth, { admin: true }))
  app.get(
    '/',
    {
      schema: {
        tags: ['Summary'],
        response: {
          200: Type.Object({ data: SummaryCountsSchema, meta: EmptyMetaSchema }),
          ...errorResponses(401),
        },
      },
    },
    async () => ({ data: await counts(), meta: {} }),
  )
}
