import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { nestedDeeperThan } from '../../src/plugins/json-body.js'
import { buildTestApp, deepJson, login, sendJson } from '../helpers/app.js'

// A body is parsed before any route, schema or session check sees it, and V8's parser spends far
// more on a deeply nested text than on a flat one: such bodies are refused before the parse.

/** How deep a JSON value nests arrays and objects (a scalar: 0). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0
  const members = Array.isArray(value) ? value : Object.values(value)
  return 1 + Math.max(0, ...members.map(depthOf))
}

describe('bodies nested too deep', () => {
  it('are told from the JSON text alone, brackets in strings and escapes aside', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (value, max) => {
        expect(nestedDeeperThan(JSON.stringify(value), max)).toBe(depthOf(value) > max)
      }),
      { numRuns: 2000 },
    )
    expect(nestedDeeperThan('{"a":"[[[[\\"[[[["}', 1)).toBe(false)
    expect(nestedDeeperThan('{"a":"\\\\"}', 0)).toBe(true)
    expect(nestedDeeperThan(deepJson(64), 64)).toBe(false)
    expect(nestedDeeperThan(deepJson(65), 64)).toBe(true)
  })

  it('are refused with 400 before any route: unknown paths, logins, management writes', async () => {
    const app = await buildTestApp()
    const token = await login(app)
    const bomb = `${'['.repeat(500_000)}${']'.repeat(500_000)}`
    const refusals = [
      await app.inject({
        method: 'POST',
        url: '/no/such/path',
        headers: { 'content-type': 'application/json' },
        payload: bomb,
      }),
      await app.inject({
        method: 'POST',
        url: '/edge/management/v1/authenticate?method=password',
        headers: { 'content-type': 'application/json' },
        payload: `{"username":"admin","password":${bomb}}`,
      }),
      await sendJson(
        app,
        token,
        'POST',
        '/edge/management/v1/identities',
        `{"tags":${deepJson(65)}}`,
      ),
    ]
    for (const res of refusals) {
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'body', reason: 'nested deeper than 64 levels' },
      })
    }
    // Nesting the routes take is parsed as before.
    const ok = await sendJson(
      app,
      token,
      'POST',
      '/edge/management/v1/identities',
      `{"name":"nested","tags":${deepJson(32)}}`,
    )
    expect(ok.statusCode).toBe(201)
  })
})

describe('bodies with a long member name over many strings', () => {
  // Each string is checked for control characters before any route; a path written for every
  // element, the long name its prefix, once copied that name per element (minutes of one core
  // for a megabyte body to an unknown path). Hang guard: vitest's timeout, no time asserted.
  const key = 'a'.repeat(400_000)
  const strings = (n: number, last = '') =>
    `{"${key}":[${Array(n - 1)
      .fill('""')
      .join(',')},${JSON.stringify(last)}]}`
  /** A JSON body (text, or a value to serialise) posted to `url` (a path no route has). */
  const post = (app: FastifyInstance, payload: string | object, url = '/no/such/path') =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload })

  it('are checked once per string: an unknown path answers 404, a login 400 for its missing user name', async () => {
    const app = await buildTestApp()
    const body = strings(150_000)
    expect(body.length).toBeLessThan(1024 * 1024)
    const unknown = await post(app, body)
    expect(unknown.statusCode).toBe(404)
    const loginRes = await post(app, body, '/edge/management/v1/authenticate?method=password')
    // Unknown login fields are ignored (as OpenZiti): refused for the missing user name.
    expect(loginRes.statusCode).toBe(400)
    expect(loginRes.json().error.cause).toMatchObject({ field: 'username', reason: 'is required' })
  })

  it('name the element that holds a control character, line breaks allowed only in PEM fields', async () => {
    const app = await buildTestApp()
    const res = await post(app, strings(100_000, 'x\u0000'))
    expect(res.statusCode).toBe(400)
    expect(res.json().error.cause).toEqual({
      field: `${key}[99999]`,
      reason: 'control characters are not allowed',
    })
    const pem = await post(app, { certPem: 'line\nbreak', list: { clientCsr: 'a\r\nb' } })
    expect(pem.statusCode).toBe(404)
    const notPem = await post(app, { certPem: ['line\nbreak'] })
    expect(notPem.json().error.cause.field).toBe('certPem[0]')
  })
})
