import { type TSchema, Type } from '@sinclair/typebox'
import { Nullable } from '../common-schemas.js'

const Scalar = Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Boolean()])
const Duration = Type.String({
  minLength: 1,
  maxLength: 32,
  description: 'A Go duration such as 10m or 1h30m',
})

/**
 * One claim condition: a JSON pointer and exactly one operator (checked by the domain, which names
 * the member at fault; a union here would make the validator's error point nowhere useful).
 */
export const ClaimConditionSchema = Type.Object(
  {
    claim: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'JSON pointer to the claim, such as /azp or /realm_access/roles',
    }),
    equals: Type.Optional(Scalar),
    oneOf: Type.Optional(Type.Array(Scalar, { minItems: 1, maxItems: 32 })),
    contains: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'An element of an array claim, or a word of a space-separated one (scope)',
      }),
    ),
    matches: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'A glob over the whole string value: * any run, ? one character, \\ escapes',
      }),
    ),
    exists: Type.Optional(Type.Boolean()),
    message: Type.Optional(
      Type.String({ maxLength: 255, description: 'For operators only; never sent to clients' }),
    ),
  },
  { additionalProperties: false },
)

const members = {
  audiences: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
    minItems: 1,
    maxItems: 20,
    description:
      "Further accepted audiences: aud must contain the signer's audience or one of these",
  }),
  claims: Type.Array(ClaimConditionSchema, {
    maxItems: 32,
    description: 'Conditions that must all hold',
  }),
  maxTokenLifetime: { ...Duration, description: 'Cap on exp - iat; iat becomes required' },
  maxTokenAge: { ...Duration, description: 'Cap on now - iat (now - auth_time when present)' },
  clockSkew: { ...Duration, description: 'From 0 to 5m; replaces the global tolerance' },
  sessionEndsWithToken: Type.Boolean({
    description: "A session made by login with this signer expires no later than the token's exp",
  }),
}

const optional = <T extends TSchema>(s: T) => Type.Optional(s)

const DESCRIPTION =
  'Token rules of this signer (an extension: OpenZiti knows none). A PUT that omits tokenRules ' +
  'leaves the stored rules unchanged; null clears them; PATCH merges them member by member.'

/** `tokenRules` on create, PUT and in the detail. */
export const TokenRulesSchema = Type.Object(
  {
    audiences: optional(members.audiences),
    claims: optional(members.claims),
    maxTokenLifetime: optional(members.maxTokenLifetime),
    maxTokenAge: optional(members.maxTokenAge),
    clockSkew: optional(members.clockSkew),
    sessionEndsWithToken: optional(members.sessionEndsWithToken),
  },
  { additionalProperties: false, description: DESCRIPTION },
)

/** `tokenRules` in a PATCH: members present replace the stored ones, a null member removes one. */
export const TokenRulesPatchSchema = Type.Object(
  {
    audiences: optional(Nullable(members.audiences)),
    claims: optional(Nullable(members.claims)),
    maxTokenLifetime: optional(Nullable(members.maxTokenLifetime)),
    maxTokenAge: optional(Nullable(members.maxTokenAge)),
    clockSkew: optional(Nullable(members.clockSkew)),
    sessionEndsWithToken: optional(Nullable(members.sessionEndsWithToken)),
  },
  { additionalProperties: false, description: DESCRIPTION },
)
