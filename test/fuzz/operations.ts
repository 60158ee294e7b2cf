import type { FastifyInstance } from 'fastify'

interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  items?: JsonSchema
  required?: string[]
}

/** One operation of the published API, read from the app's own OpenAPI document. */
export interface Operation {
  method: string
  path: string
  query: string[]
  body?: JsonSchema
}

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { in: string; name: string }[]
        requestBody?: { content: Record<string, { schema: JsonSchema }> }
      }
    >
  >
}

/** Every operation the app publishes (the hidden `/openapi.yaml` route is not among them). */
export function operations(app: FastifyInstance): Operation[] {
  const spec = app.swagger() as unknown as OpenApi // the generated document has this shape
  return Object.entries(spec.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      path: path.replace(/\/$/, ''),
      query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      ...(op.requestBody ? { body: op.requestBody.content['application/json']?.schema ?? {} } : {}),
    })),
  )
}

/**
 * Dotted paths of every field a body schema declares, nested objects included, and the fields of
 * an array's objects through its first element (`tokenRules.claims.0.claim`).
 */
export function fieldPaths(schema: JsonSchema | undefined, prefix: string[] = []): string[][] {
  const items = schema?.items?.properties ? fieldPaths(schema.items, [...prefix, '0']) : []
  return [
    ...items,
    ...Object.entries(schema?.properties ?? {}).flatMap(([name, child]) => [
      [...prefix, name],
      ...fieldPaths(child, [...prefix, name]),
    ]),
  ]
}

/** Whether the schema of a field (by path) says it holds a string. */
export function isStringField(schema: JsonSchema | undefined, path: string[]): boolean {
  let s = schema
  for (const key of path) s = /^\d+$/.test(key) ? s?.items : s?.properties?.[key]
  const type = s?.type
  return type === 'string' || (Array.isArray(type) && type.includes('string'))
}

/**
 * A copy of `body` with the field at `path` set to `value` (intermediate objects created; a
 * numeric key sets an array element).
 */
export function withField(body: unknown, path: string[], value: unknown): unknown {
  const [head, ...rest] = path
  if (head === undefined) return value
  if (/^\d+$/.test(head)) {
    const array = Array.isArray(body) ? [...body] : []
    const i = Number(head)
    array[i] = rest.length === 0 ? value : withField(array[i], rest, value)
    return array
  }
  const copy: Record<string, unknown> =
    body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body } : {}
  copy[head] = rest.length === 0 ? value : withField(copy[head], rest, value)
  return copy
}

let counter = 0

/** A valid body for the operation, unique where names must be, so that some requests succeed. */
export function baseBody(op: Operation, ids: Ids): unknown {
  const n = counter++
  if (op.path.includes('jwt-signers')) {
    return {
      name: `fuzz signer ${n}`,
      enabled: true,
      issuer: `https://fuzz-${n}.localhost`,
      audience: 'ziti',
      jwksEndpoint: 'https://127.0.0.1:1/jwks',
      externalAuthUrl: 'https://login.localhost',
      tags: { n },
      tokenRules: {
        audiences: ['account'],
        claims: [{ claim: '/azp', oneOf: ['ziti-tunnel'], message: 'tunneler only' }],
        maxTokenAge: '1h',
        sessionEndsWithToken: true,
      },
    }
  }
  if (op.path.endsWith('/password')) return { password: `fuzz-password-${n}` }
  if (op.path.includes('/identities')) {
    return { name: `fuzz identity ${n}`, isAdmin: false, authPolicyId: ids.policy, tags: {} }
  }
  if (op.path.includes('/auth-policies')) {
    return {
      name: `fuzz policy ${n}`,
      primary: {
        cert: { allowed: false },
        updb: { allowed: true },
        extJwt: { allowed: true, allowedSigners: [ids.signer] },
      },
      secondary: { requireTotp: false, requireExtJwtSigner: null },
      tags: {},
    }
  }
  if (op.path.endsWith('/authenticate')) return { username: 'nobody', password: 'not-a-secret-pw' }
  return {}
}

/** Entities created before fuzzing, so that paths name existing records too. */
export interface Ids {
  signer: string
  /** The issuer of `signer`, so that generated JWTs reach the signer's key lookup. */
  issuer: string
  identity: string
  policy: string
}
