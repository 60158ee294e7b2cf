import fc from 'fast-check'
import type { FuzzRequest, Harness } from './harness.js'
import { HUGE_NUMBERS, headerValue, hostileString, hostileValue, queryValue } from './hostile.js'
import { fieldPaths, type Operation, withField } from './operations.js'

/** Stands for the harness's current session token, which changes when a request ends it. */
const TOKEN = '<session>'

/** Percent-encodes any string; a lone surrogate (which has no UTF-8) becomes U+FFFD first. */
export const enc = (s: string) => encodeURIComponent(s.replace(/\p{Cs}/gu, '\ufffd'))
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')

/** Compact JWTs with hostile headers and claims, some naming the fixture signer's issuer. */
function jwtLike(issuer: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.record({ alg: fc.constantFrom('RS256', 'ES256', 'none', 'HS256'), kid: hostileValue }),
      fc.record({
        iss: fc.oneof(fc.constant(issuer), hostileValue),
        sub: hostileValue,
        aud: hostileValue,
        exp: fc.oneof(fc.constantFrom(...HUGE_NUMBERS), hostileValue),
      }),
      fc.string({ maxLength: 20 }),
    )
    .map(([header, claims, sig]) => `${b64(header)}.${b64(claims)}.${sig}`)
}

/** How to make the body: the valid one, the valid one with one field replaced, or anything. */
type Recipe =
  | { kind: 'base' }
  | { kind: 'field'; path: string[]; value: unknown }
  | { kind: 'whole'; value: unknown }

function bodyRecipe(op: Operation): fc.Arbitrary<Recipe | undefined> {
  const whole = hostileValue.map((value): Recipe => ({ kind: 'whole', value }))
  if (!op.body) return fc.option(whole, { nil: undefined })
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<Recipe>({ kind: 'base' }) },
    {
      weight: 6,
      arbitrary: fc
        .tuple(fc.constantFrom(...fieldPaths(op.body)), hostileValue)
        .map(([path, value]): Recipe => ({ kind: 'field', path, value })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(hostileString, hostileValue)
        .map(([name, value]): Recipe => ({ kind: 'field', path: [name], value })),
    },
    { weight: 1, arbitrary: whole },
  )
}

const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined })

/** What varies in one request to an operation (its body is made when it is sent). */
function planFor(op: Operation, h: Harness) {
  const id = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom(h.ids.signer, h.ids.identity, h.ids.policy, 'default'),
    },
    { weight: 2, arbitrary: hostileString.map(enc) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%FF', '%ED%A0%80', '..', '%2F', '%00') },
    { weight: 1, arbitrary: fc.constant('a'.repeat(101)) },
  )
  const names = [...new Set([...op.query, 'filter', 'sort', 'limit', 'offset'])]
  const pair = fc.tuple(
    fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, hostileString),
    queryValue,
  )
  const headers = fc.record({
    'zt-session': fc.oneof({ weight: 5, arbitrary: fc.constant(TOKEN) }, optional(headerValue)),
    authorization: optional(
      fc.oneof(
        jwtLike(h.ids.issuer).map((t) => `Bearer ${t}`),
        headerValue,
      ),
    ),
    'content-type': fc.oneof(
      { weight: 6, arbitrary: fc.constant('application/json') },
      fc.constantFrom('text/plain', 'application/json; charset=utf-16', 'APPLICATION/JSON'),
      headerValue,
    ),
    accept: optional(headerValue),
  })
  return fc.record({
    op: fc.constant(op),
    id,
    method: op.query.includes('method')
      ? fc.oneof(fc.constantFrom('password', 'ext-jwt'), queryValue)
      : fc.constant(undefined),
    query: fc.array(pair, { maxLength: 4 }),
    headers,
    recipe: bodyRecipe(op),
  })
}

export type Plan = ReturnType<typeof planFor> extends fc.Arbitrary<infer P> ? P : never

/** Requests to any of the operations, with hostile values in every part. */
export function plans(ops: Operation[], h: Harness): fc.Arbitrary<Plan> {
  return fc.oneof(...ops.map((op) => planFor(op, h)))
}

/** The request a plan describes, with the session token current at the time of sending. */
export function toRequest(plan: Plan, h: Harness): FuzzRequest {
  const { op, recipe } = plan
  const pairs = plan.method === undefined ? plan.query : [['method', plan.method], ...plan.query]
  const query = pairs.map(([k, v]) => `${enc(k ?? '')}=${enc(v ?? '')}`).join('&')
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(plan.headers)) {
    if (v !== undefined) headers[k] = v === TOKEN ? h.token : v
  }
  const base = op.body ? h.base(op) : undefined
  let body: unknown
  if (recipe?.kind === 'base') body = base
  else if (recipe?.kind === 'whole') body = recipe.value
  else if (recipe?.kind === 'field') body = withField(base, recipe.path, recipe.value)
  return {
    method: op.method,
    url: `${op.path.replace('{id}', plan.id)}${query ? `?${query}` : ''}`,
    headers,
    ...(body === undefined ? {} : { body }),
  }
}
