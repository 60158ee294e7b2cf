import { describe, expect, it } from 'vitest'
import { enc } from './generate.js'
import { startHarness } from './harness.js'
import { DEEP, HOSTILE_STRINGS, PROTOTYPE_NAMES } from './hostile.js'
import { fieldPaths, isStringField, type Operation, withField } from './operations.js'

/** Numbers past every bound and values of the wrong JSON type, for every body field. */
const BODY_VALUES: unknown[] = [1e308, -(2 ** 63), 0.5, true, '', [], {}, null, 'true', ['a']]

const lists = (ops: Operation[]) =>
  ops.filter((o) => o.method === 'GET' && /signers$|identities$|auth-policies$/.test(o.path))

/** Every operation with a body, once (the `ext-jwt-signers` alias shares its routes' code). */
const bodies = (ops: Operation[]) =>
  ops.filter((o) => o.body && !o.path.startsWith('/edge/management/v1/ext-'))

describe('fixed hostile requests', () => {
  it('emoji and control characters in every string field of every body', async () => {
    const { h, ops } = await startHarness()
    for (const op of bodies(ops)) {
      for (const path of fieldPaths(op.body).filter((p) => isStringField(op.body, p))) {
        for (const value of ['😀 \u0000\u0007\u001b[31m\r\n\u2028\u202e', '\ud800']) {
          const id = h.idFor(op)
          await h.send(op.path, {
            method: op.method,
            url:
              op.path.replace('{id}', id) + (op.query.includes('method') ? '?method=password' : ''),
            headers: h.admin(),
            body: withField(h.base(op), path, value),
          })
        }
      }
    }
    // Whatever the signers now hold, a refused JWT login stays a 401 in the envelope.
    for (const prefix of ['/edge/client/v1', '/edge/management/v1']) {
      await h.send(`${prefix}/authenticate`, {
        method: 'POST',
        url: `${prefix}/authenticate?method=ext-jwt`,
        headers: { authorization: 'Bearer a.b.c' },
      })
    }
    expect(h.report()).toEqual([])
  })

  it('built-in property names as filter and sort fields on every list', async () => {
    const { h, ops } = await startHarness()
    for (const op of lists(ops)) {
      for (const name of PROTOTYPE_NAMES) {
        const cases: [string, string][] = [
          ['filter', `${name} = "a"`],
          ['filter', `${name} = 1`],
          ['filter', `not ${name} contains "a"`],
          ['sort', name],
          ['sort', `${name} desc`],
        ]
        for (const [param, value] of cases) {
          await h.send(op.path, {
            method: 'GET',
            url: `${op.path}?${param}=${enc(value)}`,
            headers: h.admin(),
          })
        }
      }
    }
    expect(h.report()).toEqual([])
  })

  it('tags nested 5000 levels deep on create, PUT and PATCH of every resource', async () => {
    const { h, ops } = await startHarness()
    for (const op of ops.filter((o) => o.body?.properties?.tags)) {
      const id = h.idFor(op)
      await h.send(op.path, {
        method: op.method,
        url: op.path.replace('{id}', id),
        headers: h.admin(),
        body: withField(h.base(op), ['tags'], { deep: DEEP }),
      })
    }
    expect(h.report()).toEqual([])
  })

  it('repeated filter, sort, limit and offset on every list, the client list included', async () => {
    const { h, ops } = await startHarness()
    for (const op of lists(ops)) {
      for (const query of [
        'filter=name%20%3D%20%22a%22&filter=name%20%3D%20%22b%22',
        'sort=name&sort=createdAt',
        'limit=1&limit=2',
        'offset=0&offset=1',
        'filter=&sort=',
      ]) {
        await h.send(op.path, { method: 'GET', url: `${op.path}?${query}`, headers: h.admin() })
      }
    }
    expect(h.report()).toEqual([])
  })

  it('huge numbers and wrong types in every body field', async () => {
    const { h, ops } = await startHarness()
    for (const op of bodies(ops)) {
      const query = op.query.includes('method') ? '?method=password' : ''
      const url = op.path.replace('{id}', h.idFor(op)) + query
      for (const path of fieldPaths(op.body)) {
        for (const value of BODY_VALUES) {
          const body = withField(h.base(op), path, value)
          await h.send(op.path, { method: op.method, url, headers: h.admin(), body })
        }
      }
      const raw = '{"name":1e999,"tags":{"n":-1e999}}'
      await h.send(op.path, { method: op.method, url, headers: h.admin(), raw })
    }
    expect(h.report()).toEqual([])
  }, 60_000)

  it('huge numbers and hostile text in every query parameter and path id', async () => {
    const { h, ops } = await startHarness()
    for (const op of lists(ops)) {
      for (const q of [
        'limit=1e308',
        'offset=99999999999999999999',
        'limit=-1',
        'offset=-0',
        'limit=0x10',
        'limit=%F0%9F%98%80',
        'filter=%00',
        'sort=%0D%0A',
      ]) {
        await h.send(op.path, { method: 'GET', url: `${op.path}?${q}`, headers: h.admin() })
      }
    }
    for (const prefix of ['/edge/client/v1', '/edge/management/v1']) {
      for (const method of [...HOSTILE_STRINGS.map(enc), 'password&method=ext-jwt', '']) {
        await h.send(`${prefix}/authenticate`, {
          method: 'POST',
          url: `${prefix}/authenticate?method=${method}`,
          headers: h.admin(),
          body: { username: 'nobody', password: 'not-a-secret-pw' },
        })
      }
    }
    for (const op of ops.filter((o) => o.path.includes('{id}'))) {
      for (const id of [...HOSTILE_STRINGS.map(enc), '%zz', '%ED%A0%80', String(2 ** 64), '-1']) {
        await h.send(op.path, {
          method: op.method,
          url: op.path.replace('{id}', id),
          headers: h.admin(),
          ...(op.body ? { body: h.base(op) } : {}),
        })
      }
    }
    expect(h.report()).toEqual([])
  })

  it('hostile session, authorization and content-type headers on every route', async () => {
    const { h, ops } = await startHarness()
    const values = ['', 'null', 'x'.repeat(9000), '\u00ff\u00e9', 'Bearer', 'Bearer a.b.c', 'a, b']
    for (const op of ops) {
      const url =
        op.path.replace('{id}', h.idFor(op)) +
        (op.query.includes('method') ? '?method=ext-jwt' : '')
      for (const value of values) {
        const variants: Record<string, string>[] = [
          { 'zt-session': value },
          { 'zt-session': h.token, authorization: value },
          { 'zt-session': h.token, 'content-type': value },
        ]
        for (const headers of variants) {
          await h.send(op.path, {
            method: op.method,
            url,
            headers,
            ...(op.body ? { body: h.base(op) } : {}),
          })
        }
      }
    }
    expect(h.report()).toEqual([])
  })
})
