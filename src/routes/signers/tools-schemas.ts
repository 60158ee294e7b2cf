import { type Static, Type } from '@sinclair/typebox'
import { REFUSAL_KINDS } from '../../jwt/verify.js'
import { EmptyMetaSchema, Nullable } from '../common-schemas.js'

const Url = Type.String({ minLength: 1, maxLength: 2048 })

export const DiscoverBodySchema = Type.Object(
  { issuer: Type.String({ minLength: 1, maxLength: 2048, description: 'The issuer URL' }) },
  { additionalProperties: false },
)

/** A proposed signer body, ready to complete (name, audience) and POST. */
export const DiscoveredSignerSchema = Type.Object({
  issuer: Type.String(),
  jwksEndpoint: Url,
  externalAuthUrl: Nullable(Url),
})

export const DiscoverEnvelopeSchema = Type.Object({
  data: DiscoveredSignerSchema,
  meta: EmptyMetaSchema,
})

export type DiscoveredSigner = Static<typeof DiscoveredSignerSchema>

export const VerifyTokenBodySchema = Type.Object(
  { token: Type.String({ maxLength: 65536, description: 'The JWT to explain (never stored)' }) },
  { additionalProperties: false },
)

const Decoded = Type.Unsafe<Record<string, unknown> | null>({
  type: ['object', 'null'],
  additionalProperties: true,
  description: 'Decoded without trusting it; null when the token is not a JWS',
})
const RefusalKind = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  enum: [...REFUSAL_KINDS, null],
  description: 'The stable label of the refusal (as in the login metrics); null when accepted',
})

/** What JWT login would make of a token: accepted or not, and the precise reason. */
export const TokenExplanationSchema = Type.Object({
  accepted: Type.Boolean(),
  kind: RefusalKind,
  reason: Nullable(Type.String()),
  signerId: Nullable(Type.String()),
  kid: Nullable(Type.String()),
  identityId: Nullable(Type.String()),
  rule: Nullable(
    Type.String({
      description: "The signer's token rule the token broke, such as tokenRules.claims[2]",
    }),
  ),
  ruleMessage: Nullable(Type.String({ description: "That rule's message, for operators" })),
  header: Decoded,
  claims: Decoded,
})

export const VerifyTokenEnvelopeSchema = Type.Object({
  data: TokenExplanationSchema,
  meta: EmptyMetaSchema,
})
