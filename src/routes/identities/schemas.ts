import { type Static, Type } from '@sinclair/typebox'
import {
  baseEntityFields,
  envelopes,
  LinksSchema,
  Nullable,
  TagsSchema,
} from '../common-schemas.js'

const Name = Type.String({ minLength: 1, maxLength: 255 })
const ExternalId = Type.String({ maxLength: 1024 })
const PolicyId = Type.String({ maxLength: 64 })
const NullableTags = Type.Unsafe<Record<string, unknown> | null>({
  ...TagsSchema,
  type: ['object', 'null'],
})
/** OpenZiti's role attributes: free names that group identities (listed by the console's pickers). */
const RoleAttributes = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 100 })

// OpenZiti's tools send these (identityCreate/Update); they are accepted and have no effect here.
const compat = {
  type: Type.Optional(Type.String({ maxLength: 64 })),
  enrollment: Type.Optional(Type.Unsafe<unknown>({ type: ['object', 'null'] })),
  appData: Type.Optional(Type.Unsafe<unknown>({ type: ['object', 'null'] })),
  defaultHostingPrecedence: Type.Optional(Type.String({ maxLength: 32 })),
  defaultHostingCost: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 65535 }))),
  serviceHostingPrecedences: Type.Optional(Type.Unsafe<unknown>({ type: ['object', 'null'] })),
  serviceHostingCosts: Type.Optional(Type.Unsafe<unknown>({ type: ['object', 'null'] })),
  permissions: Type.Optional(Nullable(Type.Array(Type.String()))),
}

const optionalFields = {
  externalId: Type.Optional(Nullable(ExternalId)),
  isAdmin: Type.Optional(Nullable(Type.Boolean())),
  disabled: Type.Optional(Nullable(Type.Boolean())),
  authPolicyId: Type.Optional(Nullable(PolicyId)),
  roleAttributes: Type.Optional(Nullable(RoleAttributes)),
  tags: Type.Optional(NullableTags),
  ...compat,
}

/** Body of create and PUT: name is required. */
export const IdentityBodySchema = Type.Object(
  { name: Name, ...optionalFields },
  { additionalProperties: false },
)

/** Body of PATCH: every key optional. */
export const IdentityPatchSchema = Type.Object(
  { name: Type.Optional(Nullable(Name)), ...optionalFields },
  { additionalProperties: false },
)

export const PasswordBodySchema = Type.Object(
  { password: Type.String({ maxLength: 1024 }) },
  { additionalProperties: false },
)

export const IdentityDetailSchema = Type.Object({
  ...baseEntityFields,
  name: Type.String(),
  externalId: Nullable(Type.String()),
  isAdmin: Type.Boolean(),
  isDefaultAdmin: Type.Boolean(),
  disabled: Type.Boolean(),
  authPolicyId: Type.String(),
  authPolicy: Type.Object({
    id: Type.String(),
    name: Type.String(),
    entity: Type.String(),
    _links: LinksSchema,
  }),
  hasApiSession: Type.Boolean(),
  type: Type.Object({
    id: Type.String(),
    name: Type.String(),
    entity: Type.String(),
    _links: LinksSchema,
  }),
  typeId: Type.String(),
  roleAttributes: Type.Array(Type.String()),
  // Features this service does not have, reported as absent so that edge API clients work.
  authenticators: Type.Object({}),
  enrollment: Type.Object({}),
  envInfo: Type.Object({}),
  sdkInfo: Type.Object({}),
  hasEdgeRouterConnection: Type.Boolean(),
  edgeRouterConnectionStatus: Type.String(),
  isMfaEnabled: Type.Boolean(),
  serviceHostingPrecedences: Type.Object({}),
  serviceHostingCosts: Type.Object({}),
  defaultHostingCost: Type.Integer(),
  defaultHostingPrecedence: Type.String(),
  permissions: Type.Array(Type.String()),
})
export type IdentityDetail = Static<typeof IdentityDetailSchema>

const IdentityEnvelopes = envelopes(IdentityDetailSchema)
export const IdentityDetailEnvelopeSchema = IdentityEnvelopes.detail
export const IdentityListEnvelopeSchema = IdentityEnvelopes.list
