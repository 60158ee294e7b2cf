import { type Static, Type } from '@sinclair/typebox'
import { ListMetaSchema, Nullable, TimestampSchema } from '../common-schemas.js'

const Action = Type.Union(
  [
    'create',
    'update',
    'patch',
    'delete',
    'set-password',
    'login',
    'login-failed',
    'logout',
    'enroll',
    'snapshot',
  ].map((a) => Type.Literal(a)),
)

const EntityType = Type.Union(
  ['external-jwt-signers', 'identities', 'auth-policies', 'api-sessions', 'database'].map((e) =>
    Type.Literal(e),
  ),
)

export const AuditActorSchema = Type.Object({ id: Type.String(), name: Type.String() })

export const AuditEventSchema = Type.Object(
  {
    id: Type.String(),
    at: TimestampSchema,
    actor: Type.Union([AuditActorSchema, Type.Null()], {
      description: 'The identity that made the change (for a login, the one that logged in)',
    }),
    action: Action,
    entityType: EntityType,
    entityId: Type.String(),
    requestId: Nullable(Type.String()),
    method: Nullable(Type.String({ description: 'The login method (password, ext-jwt)' })),
    changedFields: Type.Array(Type.String(), { description: 'Field names, never values' }),
  },
  { description: 'A management write, login or logout' },
)
export type AuditEvent = Static<typeof AuditEventSchema>

export const AuditEventListEnvelopeSchema = Type.Object({
  data: Type.Array(AuditEventSchema),
  meta: ListMetaSchema,
})
