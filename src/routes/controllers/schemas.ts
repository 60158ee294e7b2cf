import { Type } from '@sinclair/typebox'
import { LinksSchema, ListMetaSchema, TagsSchema, TimestampSchema } from '../common-schemas.js'

const ApiAddressSchema = Type.Object({ url: Type.String(), version: Type.String() })

/** One controller instance (OpenZiti's `controllerDetail`). */
export const ControllerSchema = Type.Object(
  {
    id: Type.String(),
    _links: LinksSchema,
    createdAt: TimestampSchema,
    updatedAt: TimestampSchema,
    tags: TagsSchema,
    name: Type.String(),
    apiAddresses: Type.Record(Type.String(), Type.Array(ApiAddressSchema), {
      description: 'Its API base URLs by API name (edge-client, edge-management)',
    }),
    certPem: Type.String({ description: 'Its TLS certificate; empty over plain HTTP' }),
    fingerprint: Type.String({ description: 'SHA-1 of that certificate; empty over plain HTTP' }),
    ctrlAddress: Type.Null(),
    isOnline: Type.Boolean({ description: 'False once three heartbeats were missed' }),
    isPreferredLeader: Type.Boolean(),
    lastJoinedAt: TimestampSchema,
  },
  { description: 'A controller instance that shares the store' },
)

export const ControllerListEnvelopeSchema = Type.Object({
  data: Type.Array(ControllerSchema),
  meta: ListMetaSchema,
})
