import { type Static, Type } from '@sinclair/typebox'
import { EmptyMetaSchema } from '../common-schemas.js'

/** One version of one API: its path and the absolute URLs it is reached at. */
const ApiVersionSchema = Type.Object({
  path: Type.String(),
  apiBaseUrls: Type.Array(Type.String()),
})
const V1Schema = Type.Object({ v1: ApiVersionSchema })

/** The edge API's `version` definition, with the APIs this controller serves. */
export const VersionSchema = Type.Object({
  version: Type.String(),
  revision: Type.String(),
  buildDate: Type.String(),
  runtimeVersion: Type.String(),
  capabilities: Type.Array(Type.String()),
  apiVersions: Type.Object({
    edge: V1Schema,
    'edge-client': V1Schema,
    'edge-management': V1Schema,
  }),
})
export type Version = Static<typeof VersionSchema>

export const VersionEnvelopeSchema = Type.Object(
  { data: VersionSchema, meta: EmptyMetaSchema },
  { description: "The edge API's listVersionEnvelope" },
)
