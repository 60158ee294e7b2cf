import { type Static, Type } from '@sinclair/typebox'
import {
  baseEntityFields,
  EmptyMetaSchema,
  envelopes,
  LinksSchema,
  Nullable,
  PaginationSchema,
  TagsSchema,
  TimestampSchema,
} from '../common-schemas.js'
import { TokenRulesPatchSchema, TokenRulesSchema } from './token-rules-schemas.js'

const Name = Type.String({ minLength: 1, maxLength: 255 })
const Issuer = Type.String({ minLength: 1, maxLength: 2048 })
const Audience = Type.String({ minLength: 1, maxLength: 2048 })
// Optional text fields: "" means "not set", as null does (OpenZiti's CLI sends `externalAuthUrl: ""`).
const Url = Type.String({ maxLength: 2048 })
const CertPem = Type.String({ maxLength: 65536 })
const Kid = Type.String({ maxLength: 255 })
const ClaimsProperty = Type.String({ maxLength: 255 })
const ClientId = Type.String({ maxLength: 255 })
const Scopes = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 50 })
const TargetToken = Type.Union([Type.Literal('ACCESS'), Type.Literal('ID')])
const NullableTargetToken = Type.Unsafe<'ACCESS' | 'ID' | null>({
  type: ['string', 'null'],
  enum: ['ACCESS', 'ID', null],
})
const NullableScopes = Type.Unsafe<string[] | null>({ ...Scopes, type: ['array', 'null'] })
const NullableTags = Type.Unsafe<Record<string, unknown> | null>({
  ...TagsSchema,
  type: ['object', 'null'],
})

const optionalFields = {
  jwksEndpoint: Type.Optional(Nullable(Url)),
  certPem: Type.Optional(Nullable(CertPem)),
  kid: Type.Optional(Nullable(Kid)),
  claimsProperty: Type.Optional(Nullable(ClaimsProperty)),
  useExternalId: Type.Optional(Nullable(Type.Boolean())),
  externalAuthUrl: Type.Optional(Nullable(Url)),
  clientId: Type.Optional(Nullable(ClientId)),
  scopes: Type.Optional(NullableScopes),
  targetToken: Type.Optional(NullableTargetToken),
  tags: Type.Optional(NullableTags),
  // JWT enrollment (`POST /edge/client/v1/enroll/token`); selectors are JSON pointers.
  enrollToCertEnabled: Type.Optional(Nullable(Type.Boolean())),
  enrollToTokenEnabled: Type.Optional(Nullable(Type.Boolean())),
  enrollNameClaimsSelector: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  enrollAttributeClaimsSelector: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  enrollAuthPolicyId: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
}

/** Body of create and PUT: name, enabled, issuer and audience are required. */
export const SignerBodySchema = Type.Object(
  {
    name: Name,
    enabled: Type.Boolean(),
    issuer: Issuer,
    audience: Audience,
    ...optionalFields,
    tokenRules: Type.Optional(Nullable(TokenRulesSchema)),
  },
  { additionalProperties: false },
)

/** Body of PATCH: every key optional; null clears a field or resets it to its default. */
export const SignerPatchSchema = Type.Object(
  {
    name: Type.Optional(Nullable(Name)),
    enabled: Type.Optional(Nullable(Type.Boolean())),
    issuer: Type.Optional(Nullable(Issuer)),
    audience: Type.Optional(Nullable(Audience)),
    ...optionalFields,
    tokenRules: Type.Optional(Nullable(TokenRulesPatchSchema)),
  },
  { additionalProperties: false },
)

export const SignerDetailSchema = Type.Object({
  ...baseEntityFields,
  name: Type.String(),
  enabled: Type.Boolean(),
  issuer: Type.String(),
  audience: Type.String(),
  jwksEndpoint: Nullable(Type.String()),
  certPem: Nullable(Type.String()),
  kid: Nullable(Type.String()),
  claimsProperty: Type.String(),
  useExternalId: Type.Boolean(),
  externalAuthUrl: Nullable(Type.String()),
  clientId: Nullable(Type.String()),
  scopes: Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } }),
  targetToken: TargetToken,
  // As upstream: the flags are omitted when false.
  enrollToTokenEnabled: Type.Optional(Type.Boolean()),
  enrollToCertEnabled: Type.Optional(Type.Boolean()),
  enrollNameClaimsSelector: Type.String(),
  enrollAttributeClaimsSelector: Type.String({ description: 'empty when unset' }),
  enrollAuthPolicyId: Type.String(),
  commonName: Type.String(),
  fingerprint: Nullable(Type.String()),
  notBefore: Nullable(TimestampSchema),
  notAfter: Nullable(TimestampSchema),
  tokenRules: Nullable(TokenRulesSchema),
})
export type SignerDetail = Static<typeof SignerDetailSchema>

const SignerEnvelopes = envelopes(SignerDetailSchema)
export const SignerDetailEnvelopeSchema = SignerEnvelopes.detail
export const SignerListEnvelopeSchema = SignerEnvelopes.list

/** What unauthenticated clients see of a signer: nothing but how to start a login. */
export const ClientSignerSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  externalAuthUrl: Type.String(),
  // With CTRL_CLIENT_SIGNER_FIELDS=openziti only: what OpenZiti's clients read.
  createdAt: Type.Optional(TimestampSchema),
  updatedAt: Type.Optional(TimestampSchema),
  tags: Type.Optional(TagsSchema),
  clientId: Type.Optional(Nullable(Type.String())),
  scopes: Type.Optional(Type.Array(Type.String())),
  audience: Type.Optional(Type.String()),
  targetToken: Type.Optional(TargetToken),
  enrollToCertEnabled: Type.Optional(Type.Boolean()),
  enrollToTokenEnabled: Type.Optional(Type.Boolean()),
  openIdConfigurationUrl: Type.Optional(Type.String()),
  _links: LinksSchema,
})

export const ClientSignerListEnvelopeSchema = Type.Object({
  data: Type.Array(ClientSignerSchema),
  meta: Type.Object(
    {
      pagination: Type.Optional(PaginationSchema),
      filterableFields: Type.Optional(Type.Array(Type.String())),
    },
    {
      description:
        'Empty (the seed list); with CTRL_CLIENT_SIGNER_FIELDS=openziti, pagination and filterableFields as on the management lists',
    },
  ),
})

export const ClientSignerEnvelopeSchema = Type.Object({
  data: ClientSignerSchema,
  meta: EmptyMetaSchema,
})

/** Where a signer's keys come from and how fresh they are, on this instance. */
export const SignerKeyStatusSchema = Type.Object({
  source: Type.Union([Type.Literal('certificate'), Type.Literal('jwks')]),
  kids: Type.Array(Type.String()),
  lastFetchAt: Nullable(TimestampSchema),
  lastFetchError: Nullable(Type.String()),
  nextRefreshAt: Nullable(TimestampSchema),
  refusedKeys: Type.Optional(
    Type.Array(Type.Object({ kid: Nullable(Type.String()), reason: Type.String() }), {
      description: 'Keys of the last fetched JWKS that verify nothing (a weak RSA exponent)',
    }),
  ),
})

export const SignerKeyStatusEnvelopeSchema = Type.Object({
  data: SignerKeyStatusSchema,
  meta: EmptyMetaSchema,
})
