import { type Static, Type } from '@sinclair/typebox'
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
