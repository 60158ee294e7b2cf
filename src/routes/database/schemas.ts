import { type Static, Type } from '@sinclair/typebox'
import { EmptyMetaSchema } from '../common-schemas.js'

/** The edge API's `dataIntegrityCheckDetails`. */
export const IntegrityDetailsSchema = Type.Object({
  inProgress: Type.Boolean(),
  fixingErrors: Type.Boolean({ description: 'Always false: this controller fixes nothing itself' }),
  tooManyErrors: Type.Boolean({ description: 'More problems were found than `results` lists' }),
  startTime: Type.String({
    format: 'date-time',
    description: 'When the last check started (0001-01-01T00:00:00.000Z: none has run)',
  }),
  endTime: Type.String({
    format: 'date-time',
    description: 'When it ended (0001-01-01T00:00:00.000Z: not yet)',
  }),
  error: Type.String({ description: 'Why the check could not run; empty when it ran' }),
  results: Type.Array(Type.Object({ description: Type.String(), fixed: Type.Boolean() }), {
    description: 'One entry per problem found',
  }),
})

export const IntegrityResultsEnvelopeSchema = Type.Object({
  data: IntegrityDetailsSchema,
  meta: EmptyMetaSchema,
})

export type IntegrityResultsEnvelope = Static<typeof IntegrityResultsEnvelopeSchema>
