import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox'

/** A nullable primitive, written as a JSON Schema type array (serializes fast, reads plainly). */
export function Nullable<T extends TSchema & { type: string }>(schema: T) {
  return Type.Unsafe<T['static'] | null>({ ...schema, type: [schema.type, 'null'] })
}

export const IdSchema = Type.String({ minLength: 1, maxLength: 64 })
export const TimestampSchema = Type.String({ format: 'date-time' })
export const TagsSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Free-form tags; values are strings, numbers, booleans or null',
})

export const LinkSchema = Type.Object({ href: Type.String() })
export const LinksSchema = Type.Object({ self: LinkSchema }, { additionalProperties: LinkSchema })

/** The fields every edge API entity carries (its baseEntity). */
export const baseEntityFields = {
  id: Type.String(),
  _links: LinksSchema,
  createdAt: TimestampSchema,
  updatedAt: TimestampSchema,
  tags: TagsSchema,
}

/**
 * An id in a path: any length the router takes (its maxParamLength, 100; longer is 414), so that an
 * id no entity has is 404 NOT_FOUND whatever its length, as upstream answers.
 */
export const IdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) })

export const ListQuerySchema = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: 4096 })),
  sort: Type.Optional(Type.String({ maxLength: 256 })),
  limit: Type.Optional(Type.String({ maxLength: 20 })),
  offset: Type.Optional(Type.String({ maxLength: 20 })),
})

/** A list's query parameters, as validated (strings, each maybe absent). */
export type ListQuery = Static<typeof ListQuerySchema>

export const PaginationSchema = Type.Object({
  limit: Type.Integer(),
  offset: Type.Integer(),
  totalCount: Type.Integer(),
})

export const ListMetaSchema = Type.Object({
  pagination: PaginationSchema,
  filterableFields: Type.Array(Type.String()),
})

export const EmptyMetaSchema = Type.Object({})

/** The detail envelope (`{data, meta: {}}`) and list envelope (`{data: [], meta: {pagination}}`) of a resource. */
export function envelopes<T extends TSchema>(detail: T) {
  return {
    detail: Type.Object({ data: detail, meta: EmptyMetaSchema }),
    list: Type.Object({ data: Type.Array(detail), meta: ListMetaSchema }),
  }
}

export const ErrorEnvelopeSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      requestId: Type.String(),
      cause: Type.Optional(
        Type.Object({
          field: Type.Optional(Type.String()),
          reason: Type.Optional(Type.String()),
          value: Type.Optional(Type.String()),
        }),
      ),
    }),
    meta: Type.Object({ apiVersion: Type.String(), apiEnrollmentVersion: Type.String() }),
  },
  { description: 'The edge API error envelope' },
)

export const CreateEnvelopeSchema = Type.Object({
  data: Type.Object({ id: Type.String(), _links: LinksSchema }),
  meta: EmptyMetaSchema,
})

export const EmptyEnvelopeSchema = Type.Object({
  data: Type.Object({}),
  meta: EmptyMetaSchema,
})

/** Error responses every authenticated route can give. */
export const errorResponses = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [c, ErrorEnvelopeSchema]))

export const ERROR_META = { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' } as const

/** How deep a request body may nest (`tags` is free-form JSON). */
export const MAX_BODY_DEPTH = 32

/**
 * The top-level field of `body` under which values nest deeper than `max` levels (the field's own
 * value is level 1), or undefined. Iterative, so a hostile body cannot exhaust the stack here.
 */
export function tooDeepField(body: unknown, max = MAX_BODY_DEPTH): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined
  for (const [field, value] of Object.entries(body)) {
    const stack: [unknown, number][] = [[value, 1]]
    for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
      const [node, depth] = item
      if (typeof node !== 'object' || node === null) continue
      if (depth > max) return field
      for (const child of Object.values(node)) stack.push([child, depth + 1])
    }
  }
  return undefined
}

/**
 * Drops what a body may carry and this service ignores. An `id` that says nothing: `""` on a create
 * and the path's own id on an update (OpenZiti's console sends its whole form model: `"id": ""` on
 * create, the entity's id on its auth policy PUT; OpenZiti ignores it). Any other `id`, like every
 * other read-only field of a create, stays in the body for the schema to refuse.
 *
 * An update also drops `echoed`: the detail's read-only fields (`createdAt`, `_links`, …), which a
 * form that edits what a GET returned sends back (the console's identity edit does) and OpenZiti
 * ignores. Names neither the body nor the detail knows stay, and are refused.
 */
export function dropIgnoredFields(body: unknown, same: string, echoed: ReadonlySet<string>): void {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    // A JSON object parsed from the request: its own keys are plain data.
    const fields = body as Record<string, unknown>
    if (fields.id === same) delete fields.id
    for (const name of echoed) if (Object.hasOwn(fields, name)) delete fields[name]
  }
}

/** The top-level fields of a detail envelope's `data` that `body` does not have, but `id`. */
export function detailOnlyFields(detailEnvelope: TSchema, body: TObject): ReadonlySet<string> {
  const data = (detailEnvelope as { properties?: { data?: { properties?: object } } }).properties
    ?.data?.properties
  const names = Object.keys(data ?? {}).filter(
    (name) => name !== 'id' && !Object.hasOwn(body.properties, name),
  )
  return new Set(names)
}
