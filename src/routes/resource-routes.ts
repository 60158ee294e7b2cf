import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import type { onRequestAsyncHookHandler } from 'fastify'
import type { AuditContext } from '../audit/audit-service.js'
import { fieldError } from '../errors.js'
import type { ListPage, ListParams } from '../resources.js'
import { auditContext } from './audit-events/context.js'
import {
  CreateEnvelopeSchema,
  detailOnlyFields,
  dropIgnoredFields,
  EmptyEnvelopeSchema,
  errorResponses,
  IdParamsSchema,
  ListQuerySchema,
  MAX_BODY_DEPTH,
  tooDeepField,
} from './common-schemas.js'
import { type CachedBody, notModified, pageKey, ResponseCache, tagged } from './response-cache.js'

/** What a management resource's domain service offers to its routes (writes are audited). */
export interface ResourceService<Rec extends { id: string }, Body, Patch> {
  create(body: Body, ctx: AuditContext): Promise<Rec>
  get(id: string): Promise<Rec>
  list(params: ListParams): Promise<ListPage<Rec>>
  replace(id: string, body: Body, ctx: AuditContext): Promise<Rec>
  patch(id: string, patch: Patch, ctx: AuditContext): Promise<Rec>
  delete(id: string, ctx: AuditContext): Promise<void>
  readonly filterableFields: string[]
  /** When present, list pages are kept serialised for this version (see ResponseCache). */
  listVersion?(): string | undefined
  onListChange?(listener: () => void): void
}

export interface ResourceRoutesOptions<
  Rec extends { id: string },
  B extends TObject,
  P extends TObject,
  D extends TSchema,
> {
  /** The path segment used in `_links` (`external-jwt-signers`). */
  segment: string
  tag: string
  service: ResourceService<Rec, Static<B>, Static<P>>
  body: B
  patch: P
  detailEnvelope: TSchema
  listEnvelope: TSchema
  toDetail: (record: Rec) => Static<D> | Promise<Static<D>>
  auth: onRequestAsyncHookHandler
  /**
   * Told the list's full path and how to get its default page when kept and current, so that a
   * lane can answer it before Fastify (see ../routes/lanes.ts).
   */
  keptPage?: ((path: string, kept: () => CachedBody | undefined) => void) | undefined
}

const NONE: ReadonlySet<string> = new Set()

/** The key of the page a query without parameters gets. */
const DEFAULT_PAGE = pageKey({})

/** The `:id` of an update's path, before validation; when absent, a value no body id equals. */
const pathId = (params: unknown): string => {
  const id = (params as { id?: unknown } | undefined)?.id // the router's params object
  return typeof id === 'string' && id !== '' ? id : '\u0000'
}

export const selfLink = (segment: string, id: string) => ({
  self: { href: `./${segment}/${id}` },
})

/**
 * The six routes of an edge API management resource: create (201), list, detail, PUT, PATCH and
 * DELETE (200 with an empty envelope), behind the given auth hook.
 */
export function resourceRoutes<
  Rec extends { id: string },
  B extends TObject,
  P extends TObject,
  D extends TSchema,
>(): FastifyPluginAsyncTypebox<ResourceRoutesOptions<Rec, B, P, D>> {
  return async (app, o) => {
    app.addHook('onRequest', o.auth)
    // Before schema validation and anything else that walks the body recursively.
    app.addHook('preValidation', async (request) => {
      const field = tooDeepField(request.body)
      if (field !== undefined) {
        throw fieldError('COULD_NOT_VALIDATE', field, `nested deeper than ${MAX_BODY_DEPTH} levels`)
      }
    })
    const tags = [o.tag]
    const empty = { data: {}, meta: {} }
    const pages = new ResponseCache()
    const echoedOnPut = detailOnlyFields(o.detailEnvelope, o.body)
    const echoedOnPatch = detailOnlyFields(o.detailEnvelope, o.patch)
    o.service.onListChange?.(() => pages.clear())
    o.keptPage?.(app.prefix, () => {
      const version = o.service.listVersion?.()
      return version === undefined ? undefined : pages.peek(DEFAULT_PAGE, version)
    })

    app.post(
      '/',
      {
        schema: {
          tags,
          body: o.body,
          response: { 201: CreateEnvelopeSchema, ...errorResponses(400, 401, 404, 409) },
        },
        preValidation: async (request) => dropIgnoredFields(request.body, '', NONE),
      },
      async (request, reply) => {
        const body = request.body as Static<B> // validated against o.body
        const { id } = await o.service.create(body, auditContext(request))
        return reply.code(201).send({ data: { id, _links: selfLink(o.segment, id) }, meta: {} })
      },
    )

    app.get(
      '/',
      {
        schema: {
          tags,
          querystring: ListQuerySchema,
          response: { 200: o.listEnvelope, 304: {}, ...errorResponses(400, 401) },
        },
      },
      async (request, reply) => {
        const q = request.query
        const page = async () => {
          const found = await o.service.list(q)
          return {
            data: await Promise.all(found.items.map(o.toDetail)),
            meta: {
              pagination: {
                limit: found.limit,
                offset: found.offset,
                totalCount: found.totalCount,
              },
              filterableFields: o.service.filterableFields,
            },
          }
        }
        // The route's own compiled serializer, so a kept page is byte for byte what it would be.
        const serialize = reply.getSerializationFunction('200')
        const build = async () => {
          const value = await page()
          return serialize ? serialize(value) : JSON.stringify(value)
        }
        const version = o.service.listVersion?.()
        const key = pageKey(q)
        const { body, etag } =
          version === undefined ? tagged(await build()) : await pages.get(key, version, build)
        reply.header('etag', etag)
        if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send()
        return reply.type('application/json; charset=utf-8').send(body)
      },
    )

    app.get(
      '/:id',
      {
        schema: {
          tags,
          params: IdParamsSchema,
          response: { 200: o.detailEnvelope, ...errorResponses(401, 404) },
        },
      },
      async (request) => ({
        data: await o.toDetail(await o.service.get(request.params.id)),
        meta: {},
      }),
    )

    app.put(
      '/:id',
      {
        schema: {
          tags,
          params: IdParamsSchema,
          body: o.body,
          response: { 200: EmptyEnvelopeSchema, ...errorResponses(400, 401, 404, 409) },
        },
        preValidation: async (request) =>
          dropIgnoredFields(request.body, pathId(request.params), echoedOnPut),
      },
      async (request) => {
        const body = request.body as Static<B> // validated against o.body
        await o.service.replace(request.params.id, body, auditContext(request))
        return empty
      },
    )

    app.patch(
      '/:id',
      {
        schema: {
          tags,
          params: IdParamsSchema,
          body: o.patch,
          response: { 200: EmptyEnvelopeSchema, ...errorResponses(400, 401, 404, 409) },
        },
        preValidation: async (request) =>
          dropIgnoredFields(request.body, pathId(request.params), echoedOnPatch),
      },
      async (request) => {
        const patch = request.body as Static<P> // validated against o.patch
        await o.service.patch(request.params.id, patch, auditContext(request))
        return empty
      },
    )

    app.delete(
      '/:id',
      {
        schema: {
          tags,
          params: IdParamsSchema,
          response: { 200: EmptyEnvelopeSchema, ...errorResponses(401, 404, 409) },
        },
      },
      async (request) => {
        await o.service.delete(request.params.id, auditContext(request))
        return empty
      },
    )
  }
}
