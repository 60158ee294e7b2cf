import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ajvDraft04 from 'ajv-draft-04'
import ajvFormats from 'ajv-formats'
import { parse } from 'yaml'

/**
 * Where the edge API's own specification lives: beside the project, as CI has it. A user's clone
 * has nothing beside it: the contract test is then skipped with one line (see SPEC_AVAILABLE).
 */
export const SPEC_DIR =
  process.env.EDGE_API_SPEC_DIR ??
  fileURLToPath(new URL('../../../shared/reference/edge-api/', import.meta.url))

/**
 * Whether the contract test runs: always when `EDGE_API_SPEC_DIR` names the spec (a missing spec then
 * fails, which is how CI makes it mandatory), otherwise only when the spec sits beside the checkout.
 */
export const SPEC_AVAILABLE =
  process.env.EDGE_API_SPEC_DIR !== undefined ||
  (existsSync(join(SPEC_DIR, 'management.yml')) && existsSync(join(SPEC_DIR, 'client.yml')))

type Json = Record<string, unknown>

/** Swagger 2.0 has no null; its `x-nullable` extension says where null is allowed. */
function nullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullable)
  if (node === null || typeof node !== 'object') return node
  const out: Json = {}
  // go-swagger leaves `items: null` in a few definitions; JSON Schema wants no keyword at all.
  for (const [k, v] of Object.entries(node)) if (v !== null || k !== 'items') out[k] = nullable(v)
  if (out['x-nullable'] === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null']
    else if (typeof out.$ref === 'string') return { anyOf: [{ $ref: out.$ref }, { type: 'null' }] }
  }
  return out
}

/**
 * The deliberate deviations this service documents in its README, applied to the spec so the test
 * checks everything else exactly.
 */
function applyDeviations(
  api: 'management' | 'client',
  defs: Record<string, Json>,
  clientSignerFields: 'seed' | 'openziti',
): void {
  // CTRL_CLIENT_SIGNER_FIELDS=openziti: the client list as the spec has it.
  if (api === 'client' && clientSignerFields === 'openziti') return
  if (api === 'client') {
    // The seed: the client list shows only id, name, externalAuthUrl and _links.
    defs.clientExternalJwtSignerDetail = {
      type: 'object',
      required: ['id', 'name', 'externalAuthUrl', '_links'],
      properties: {
        id: { type: 'string' },
        name: { type: 'string' },
        externalAuthUrl: { type: 'string' },
        _links: { $ref: '#/definitions/links' },
      },
      additionalProperties: false,
    }
    return
  }
  // Signer fields that are unset are null, as the upstream controller sends them.
  const detail = defs.externalJwtSignerDetail as { allOf: Json[] }
  const own = detail.allOf[1] as { properties: Record<string, Json> }
  for (const field of [
    'kid',
    'fingerprint',
    'clientId',
    'scopes',
    'externalAuthUrl',
    'notBefore',
    'notAfter',
  ]) {
    const prop = own.properties[field] as Json
    own.properties[field] = { anyOf: [prop, { type: 'null' }] }
  }
}

export interface Contract {
  /** Validates a body against the response schema of an operation; returns the errors, if any. */
  check(path: string, method: string, status: number, body: unknown): string[]
}

export function loadContract(
  api: 'management' | 'client',
  clientSignerFields: 'seed' | 'openziti' = 'seed',
): Contract {
  const file = join(SPEC_DIR, `${api}.yml`)
  if (!existsSync(file)) {
    throw new Error(
      `the edge API specification is not at ${file}: the contract test reads it from ../shared/reference/edge-api ` +
        '(beside this checkout, as CI has it), or from EDGE_API_SPEC_DIR',
    )
  }
  // The files write numbers such as `!!float 100`, which the yaml package leaves as strings.
  const float = { tag: 'tag:yaml.org,2002:float', resolve: (text: string) => Number(text) }
  const spec = parse(readFileSync(file, 'utf8'), { customTags: [float] }) as {
    definitions: Record<string, Json>
    paths: Record<string, Json>
  }
  const definitions = nullable(spec.definitions) as Record<string, Json>
  applyDeviations(api, definitions, clientSignerFields)
  // Both are CommonJS modules whose class and function are also their `default` export.
  const ajv = new ajvDraft04.default({ strict: false, allErrors: true })
  ajvFormats.default(ajv)
  for (const f of ['int64', 'int32', 'double', 'float']) ajv.addFormat(f, true)
  // go-openapi's uri and url formats accept relative references: the edge API's own links are
  // relative (`./identities/<id>`), so that is the meaning clients generated from the spec apply.
  const reference = (s: string) => {
    try {
      return new URL(s, 'http://base.invalid/').href.length > 0
    } catch {
      return false
    }
  }
  ajv.addFormat('uri', reference)
  ajv.addFormat('url', reference)
  ajv.addSchema({ id: `${api}.json`, definitions })
  return {
    check(path, method, status, body) {
      const op = (
        spec.paths[path] as
          | Record<string, { responses: Record<string, { schema?: Json }> }>
          | undefined
      )?.[method]
      // An error status the operation does not declare (upstream answers 409 on referenced deletes
      // although the spec omits it) is checked against the spec's error envelope.
      const schema =
        op?.responses[String(status)]?.schema ??
        (op && status >= 400 ? { $ref: '#/definitions/apiErrorEnvelope' } : undefined)
      if (!schema) return [`the spec has no ${status} response for ${method.toUpperCase()} ${path}`]
      const ref = JSON.parse(
        JSON.stringify(nullable(schema)).replaceAll(
          '"#/definitions/',
          `"${api}.json#/definitions/`,
        ),
      )
      const validate = ajv.compile(ref)
      return validate(body)
        ? []
        : (validate.errors ?? []).map(
            (e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
          )
    },
  }
}
