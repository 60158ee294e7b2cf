import { type Static, Type } from '@sinclair/typebox'
import { baseEntityFields, envelopes, Nullable, TagsSchema } from '../common-schemas.js'

const SignerIds = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 100 })
const Int = Type.Integer({ minimum: 0, maximum: 100_000 })

function policyBody(partial: boolean) {
  const opt = <T extends Parameters<typeof Type.Optional>[0]>(s: T) =>
    partial ? Type.Optional(s) : s
  const strict = { additionalProperties: false }
  return Type.Object(
    {
      name: opt(Type.String({ minLength: 1, maxLength: 255 })),
      primary: opt(
        Type.Object(
          {
            cert: opt(
              Type.Object(
                { allowed: opt(Type.Boolean()), allowExpiredCerts: Type.Optional(Type.Boolean()) },
                strict,
              ),
            ),
            updb: opt(
              Type.Object(
                {
                  allowed: opt(Type.Boolean()),
                  minPasswordLength: Type.Optional(Int),
                  requireSpecialChar: Type.Optional(Type.Boolean()),
                  requireNumberChar: Type.Optional(Type.Boolean()),
                  requireMixedCase: Type.Optional(Type.Boolean()),
                  maxAttempts: Type.Optional(Int),
                  lockoutDurationMinutes: Type.Optional(Int),
                  // OpenZiti's console sends its "Numeric" toggle under this name (for
                  // requireNumberChar); OpenZiti ignores it, and so does this service.
                  requireNumericChar: Type.Optional(Type.Boolean()),
                },
                strict,
              ),
            ),
            extJwt: opt(
              Type.Object(
                {
                  allowed: opt(Type.Boolean()),
                  allowedSigners: Type.Optional(
                    Type.Unsafe<string[] | null>({ ...SignerIds, type: ['array', 'null'] }),
                  ),
                },
                strict,
              ),
            ),
          },
          strict,
        ),
      ),
      secondary: opt(
        Type.Object(
          {
            requireTotp: Type.Optional(Type.Boolean()),
            requireExtJwtSigner: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
          },
          strict,
        ),
      ),
      tags: Type.Optional(
        Type.Unsafe<Record<string, unknown> | null>({ ...TagsSchema, type: ['object', 'null'] }),
      ),
    },
    strict,
  )
}

export const AuthPolicyBodySchema = policyBody(false)
export const AuthPolicyPatchSchema = policyBody(true)

export const AuthPolicyDetailSchema = Type.Object({
  ...baseEntityFields,
  name: Type.String(),
  primary: Type.Object({
    cert: Type.Object({ allowed: Type.Boolean(), allowExpiredCerts: Type.Boolean() }),
    updb: Type.Object({
      allowed: Type.Boolean(),
      minPasswordLength: Type.Integer(),
      requireSpecialChar: Type.Boolean(),
      requireNumberChar: Type.Boolean(),
      requireMixedCase: Type.Boolean(),
      maxAttempts: Type.Integer(),
      lockoutDurationMinutes: Type.Integer(),
    }),
    extJwt: Type.Object({ allowed: Type.Boolean(), allowedSigners: Type.Array(Type.String()) }),
  }),
  secondary: Type.Object({
    requireTotp: Type.Boolean(),
    requireExtJwtSigner: Nullable(Type.String()),
  }),
})
export type AuthPolicyDetail = Static<typeof AuthPolicyDetailSchema>

const AuthPolicyEnvelopes = envelopes(AuthPolicyDetailSchema)
export const AuthPolicyDetailEnvelopeSchema = AuthPolicyEnvelopes.detail
export const AuthPolicyListEnvelopeSchema = AuthPolicyEnvelopes.list
