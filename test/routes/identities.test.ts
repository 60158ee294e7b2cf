import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, deepJson, forEachStore, login, sendJson } from '../helpers/app.js'

const BASE = '/edge/management/v1/identities'

async function setup() {
  const app = await buildTestApp()
  const token = await login(app)
  const call = (method: string, url: string, payload?: unknown, session = token) =>
    caller(app, session)(method, url, payload)
  return { app, token, call }
}

async function adminId(app: FastifyInstance, token: string): Promise<string> {
  const res = await app.inject({
    method: 'GET',
    url: '/edge/management/v1/current-api-session',
    headers: { 'zt-session': token },
  })
  return res.json().data.identityId
}

forEachStore(() => {
  describe('identities', () => {
    it('creates with and without externalId, and reads the detail', async () => {
      const { call } = await setup()
      const a = await call('POST', BASE, { name: 'alice', externalId: 'idp|alice', type: 'User' })
      expect(a.statusCode).toBe(201)
      const id = a.json().data.id
      expect(a.json().data._links.self.href).toBe(`./identities/${id}`)
      const b = await call('POST', BASE, { name: 'bob' })
      expect(b.statusCode).toBe(201)

      const detail = (await call('GET', `${BASE}/${id}`)).json().data
      expect(detail).toMatchObject({
        id,
        name: 'alice',
        externalId: 'idp|alice',
        isAdmin: false,
        disabled: false,
        authPolicyId: 'default',
        authPolicy: { id: 'default', name: 'Default' },
        tags: {},
        hasApiSession: false,
        typeId: 'Default',
      })
      const bob = (await call('GET', `${BASE}/${b.json().data.id}`)).json().data
      expect(bob.externalId).toBeNull()
    })

    it('refuses a duplicate externalId and a duplicate name', async () => {
      const { call } = await setup()
      await call('POST', BASE, { name: 'alice', externalId: 'same' })
      const dup = await call('POST', BASE, { name: 'carol', externalId: 'same' })
      expect(dup.statusCode).toBe(400)
      expect(dup.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'externalId' },
      })
      const dupName = await call('POST', BASE, { name: 'alice' })
      expect(dupName.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'name' },
      })
      // Two identities without externalId are fine.
      expect((await call('POST', BASE, { name: 'x1' })).statusCode).toBe(201)
      expect((await call('POST', BASE, { name: 'x2', externalId: null })).statusCode).toBe(201)
    })

    it('PATCH clears externalId with null; PUT resets omitted fields', async () => {
      const { call } = await setup()
      const id = (
        await call('POST', BASE, { name: 'alice', externalId: 'e', tags: { a: 1 } })
      ).json().data.id
      expect((await call('PATCH', `${BASE}/${id}`, { externalId: null })).statusCode).toBe(200)
      let d = (await call('GET', `${BASE}/${id}`)).json().data
      expect(d).toMatchObject({ name: 'alice', externalId: null, tags: { a: 1 } })
      expect((await call('PUT', `${BASE}/${id}`, { name: 'alice2' })).statusCode).toBe(200)
      d = (await call('GET', `${BASE}/${id}`)).json().data
      expect(d).toMatchObject({ name: 'alice2', tags: {}, isAdmin: false })
    })

    it('requires an existing authPolicyId', async () => {
      const { call } = await setup()
      const res = await call('POST', BASE, { name: 'alice', authPolicyId: 'nope' })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'authPolicyId' },
      })
    })

    it('lists with filters on name, externalId, isAdmin and disabled', async () => {
      const { call } = await setup()
      await call('POST', BASE, { name: 'alice', externalId: 'ext-a' })
      await call('POST', BASE, { name: 'bob', disabled: true })
      const q = async (filter: string) =>
        (await call('GET', `${BASE}?filter=${encodeURIComponent(filter)}&sort=name`)).json()
      expect((await q('isAdmin = true')).data.map((i: { name: string }) => i.name)).toEqual([
        'admin',
      ])
      expect((await q('disabled = true')).data.map((i: { name: string }) => i.name)).toEqual([
        'bob',
      ])
      expect((await q('externalId = "ext-a"')).data.map((i: { name: string }) => i.name)).toEqual([
        'alice',
      ])
      expect((await q('name contains "o"')).data.map((i: { name: string }) => i.name)).toEqual([
        'bob',
      ])
      const all = await q('')
      expect(all.meta.pagination.totalCount).toBe(3)
      const bad = await call('GET', `${BASE}?filter=${encodeURIComponent('password = "x"')}`)
      expect(bad.json().error.code).toBe('INVALID_FILTER')
    })

    it('sets passwords (at least 12 characters) and password login follows the policy', async () => {
      const { app, call } = await setup()
      const id = (await call('POST', BASE, { name: 'alice' })).json().data.id
      const short = await call('PUT', `${BASE}/${id}/password`, { password: 'short-pw' })
      expect(short.statusCode).toBe(400)
      expect(short.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'password' },
      })
      expect(
        (await call('PUT', `${BASE}/${id}/password`, { password: 'alice-password-1' })).statusCode,
      ).toBe(200)
      expect(typeof (await login(app, 'alice', 'alice-password-1'))).toBe('string')
      expect(
        (await call('PUT', `${BASE}/missing/password`, { password: 'alice-password-1' }))
          .statusCode,
      ).toBe(404)

      // A policy without password login turns the same credentials into a 401.
      const policy = await call('POST', '/edge/management/v1/auth-policies', {
        name: 'jwt only',
        primary: { cert: { allowed: false }, updb: { allowed: false }, extJwt: { allowed: true } },
        secondary: { requireTotp: false },
      })
      await call('PATCH', `${BASE}/${id}`, { authPolicyId: policy.json().data.id })
      const refused = await app.inject({
        method: 'POST',
        url: '/edge/management/v1/authenticate?method=password',
        payload: { username: 'alice', password: 'alice-password-1' },
      })
      expect(refused.statusCode).toBe(401)
    })

    it('non-admin identities get 401 on management routes', async () => {
      const { app, call } = await setup()
      const id = (await call('POST', BASE, { name: 'alice' })).json().data.id
      await call('PUT', `${BASE}/${id}/password`, { password: 'alice-password-1' })
      const token = await login(app, 'alice', 'alice-password-1')
      const res = await call('GET', BASE, undefined, token)
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('UNAUTHORIZED')
    })

    it('disabling or deleting an identity ends its sessions at once', async () => {
      const { app, call } = await setup()
      for (const end of ['disable', 'delete'] as const) {
        const id = (await call('POST', BASE, { name: `admin-${end}`, isAdmin: true })).json().data
          .id
        await call('PUT', `${BASE}/${id}/password`, { password: 'second-admin-pw' })
        const other = await login(app, `admin-${end}`, 'second-admin-pw')
        expect((await call('GET', BASE, undefined, other)).statusCode).toBe(200)
        const res =
          end === 'disable'
            ? await call('PATCH', `${BASE}/${id}`, { disabled: true })
            : await call('DELETE', `${BASE}/${id}`)
        expect(res.statusCode).toBe(200)
        expect((await call('GET', BASE, undefined, other)).statusCode).toBe(401)
        const relogin = await app.inject({
          method: 'POST',
          url: '/edge/management/v1/authenticate?method=password',
          payload: { username: `admin-${end}`, password: 'second-admin-pw' },
        })
        expect(relogin.statusCode).toBe(401)
      }
    })

    it('an identity enabled again does not bring back the sessions its disabling ended', async () => {
      const { app, call } = await setup()
      const id = (await call('POST', BASE, { name: 'carol', isAdmin: true })).json().data.id
      await call('PUT', `${BASE}/${id}/password`, { password: 'carol-password-1' })
      const carol = await login(app, 'carol', 'carol-password-1')
      // Used a few times first, so the session is one the controller has seen recently.
      for (let i = 0; i < 3; i++) {
        expect((await call('GET', BASE, undefined, carol)).statusCode).toBe(200)
      }
      expect((await call('PATCH', `${BASE}/${id}`, { disabled: true })).statusCode).toBe(200)
      expect((await call('PATCH', `${BASE}/${id}`, { disabled: false })).statusCode).toBe(200)
      const res = await call('GET', BASE, undefined, carol)
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('UNAUTHORIZED')
      // A new login works again.
      const again = await login(app, 'carol', 'carol-password-1')
      expect((await call('GET', BASE, undefined, again)).statusCode).toBe(200)
    })

    it('guards the last enabled admin against delete, disable and demotion', async () => {
      const { app, token, call } = await setup()
      const me = await adminId(app, token)
      for (const [method, payload, field] of [
        ['DELETE', undefined, 'id'],
        ['PATCH', { disabled: true }, 'disabled'],
        ['PATCH', { isAdmin: false }, 'isAdmin'],
        ['PUT', { name: 'admin' }, 'isAdmin'],
      ] as const) {
        const res = await call(method, `${BASE}/${me}`, payload)
        expect(res.statusCode, `${method} ${JSON.stringify(payload)}`).toBe(409)
        expect(res.json().error.cause.field).toBe(field)
      }
      // With a second enabled admin the first may step down.
      await call('POST', BASE, { name: 'deputy', isAdmin: true })
      expect((await call('PATCH', `${BASE}/${me}`, { isAdmin: false })).statusCode).toBe(200)
    })

    it('refuses tags nested deeper than 32 levels on create, PUT and PATCH, naming the field', async () => {
      const app = await buildTestApp()
      const token = await login(app)
      const body = (tags: string) => `{"name":"deep","tags":${tags}}`
      const ok = await sendJson(app, token, 'POST', BASE, body(deepJson(32)))
      expect(ok.statusCode).toBe(201)
      const id = ok.json().data.id
      const refused = [
        await sendJson(app, token, 'POST', BASE, body(deepJson(40))),
        await sendJson(app, token, 'PUT', `${BASE}/${id}`, body(deepJson(40))),
        await sendJson(app, token, 'PATCH', `${BASE}/${id}`, `{"tags":${deepJson(33)}}`),
      ]
      for (const res of refused) {
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({
          code: 'COULD_NOT_VALIDATE',
          cause: { field: 'tags' },
        })
      }
      const stored = await caller(app, token)('GET', `${BASE}/${id}`)
      expect(stored.json().data.tags).toEqual(JSON.parse(deepJson(32)))
    })
  })
})
