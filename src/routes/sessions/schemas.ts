import { type Static, Type } from '@sinclair/typebox'
import { EmptyMetaSchema, LinksSchema, TagsSchema, TimestampSchema } from '../common-schemas.js'

export const AuthQuerySchema = Type.Object({
  typeId: Type.String(),
  provider: Type.String(),
  httpUrl: Type.Optional(Type.String()),
  id: Type.Optional(Type.String()),
  clientId: Type.Optional(Type.String()),
  scopes: Type.Optional(Type.Array(Type.String())),
})
export type AuthQuery = Static<typeof AuthQuerySchema>

export const EntityRefSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  entity: Type.String(),
  _links: LinksSchema,
})

/** The current API session, as the edge API's currentApiSessionDetail. */
export const CurrentSessionSchema = Type.Object({
  id: Type.String(),
  _links: LinksSchema,
  createdAt: TimestampSchema,
  updatedAt: TimestampSchema,
  tags: TagsSchema,
  token: Type.String(),
  identityId: Type.String(),
  identity: EntityRefSchema,
  ipAddress: Type.String(),
  authenticatorId: Type.String(),
  authQueries: Type.Array(AuthQuerySchema),
  configTypes: Type.Array(Type.String()),
  isMfaRequired: Type.Boolean(),
  isMfaComplete: Type.Boolean(),
  isCertExtendable: Type.Boolean(),
  lastActivityAt: TimestampSchema,
  cachedLastActivityAt: TimestampSchema,
  cachedUpdatedAt: TimestampSchema,
  expiresAt: TimestampSchema,
  expirationSeconds: Type.Integer(),
})
export type CurrentSession = Static<typeof CurrentSessionSchema>

export const CurrentSessionEnvelopeSchema = Type.Object({
  data: CurrentSessionSchema,
  meta: EmptyMetaSchema,
})

export const AuthenticateQuerySchema = Type.Object({
  method: Type.String({ maxLength: 32 }),
})

/**
 * Login body: username and password for `method=password`; SDK metadata is accepted and ignored.
 * Other fields are ignored too, as OpenZiti's controller ignores them: its admin console sends
 * `rejectUnauthorized` with the password, and clients add their own.
 */
export const AuthenticateBodySchema = Type.Object(
  {
    username: Type.Optional(Type.String({ maxLength: 255 })),
    password: Type.Optional(Type.String({ maxLength: 1024 })),
    configTypes: Type.Optional(Type.Array(Type.String())),
    envInfo: Type.Optional(Type.Object({})),
    sdkInfo: Type.Optional(Type.Object({})),
  },
  { additionalProperties: true },
)
