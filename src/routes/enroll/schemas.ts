import { Type } from '@sinclair/typebox'
import { EmptyMetaSchema } from '../common-schemas.js'

/** OpenZiti's `tokenEnrollmentRequest`: a CSR asks for a certificate, none for token login. */
export const TokenEnrollmentBodySchema = Type.Object(
  { clientCsr: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })) },
  { additionalProperties: false },
)

export const EnrollTokenHeadersSchema = Type.Object({
  'ziti-token-issuer-id': Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
})

const ApiAddressSchema = Type.Object({ url: Type.String(), version: Type.String() })

/** The client view of a controller, as OpenZiti 2.1's enrollment answers list them. */
export const ControllerSummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  apiAddresses: Type.Record(Type.String(), Type.Array(ApiAddressSchema)),
  isOnline: Type.Boolean(),
})

/** OpenZiti's `enrollmentCertsEnvelope`, with the controllers the client may use. */
export const EnrollmentCertsEnvelopeSchema = Type.Object({
  data: Type.Object({
    cert: Type.Optional(Type.String({ description: 'The client chain: leaf and intermediates' })),
    ca: Type.Optional(Type.String({ description: 'The trust bundle of /.well-known/est/cacerts' })),
    controllers: Type.Array(ControllerSummarySchema),
  }),
  meta: EmptyMetaSchema,
})
