import { describe, expect, it } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  buildTestApp,
  caller,
  forEachStore,
  login,
} from '../helpers/app.js'
import { certSignerAndToken } from '../helpers/signers.js'

// OpenZiti's admin console (ZAC 4.5.1) against us: its requests replayed as it sends them
// (trailing `//` on reads back, `limit=-1` for pickers, `"id": ""` in create bodies).

const M = '/edge/management/v1'
const SIGNERS = `${M}/external-jwt-signers`
const POLICIES = `${M}/auth-policies`
const IDENTITIES = `${M}/identities`

async function console_() {
  const app = await buildTestApp()
  const call = caller(app, await login(app))
  return { app, call }
}

const signerForm = (name: string, over: Record<string, unknown> = {}) => ({
  id: '',
  name,
  enabled: true,
  issuer: `https://${name}.example`,
  audience: 'ziti',
  jwksEndpoint: `https://${name}.example/jwks`,
  claimsProperty: 'sub',
  useExternalId: false,
  externalAuthUrl: null,
  scopes: [],
  tags: {},
  ...over,
})

forEachStore(() => {
  describe('OpenZiti admin console flows', () => {
    it('signer: create, read back with //, edit by PUT, delete', async () => {
      const { call } = await console_()
      const created = await call('POST', SIGNERS, signerForm('corp'))
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id as string
      const back = await call('GET', `${SIGNERS}/${id}//`)
      expect(back.statusCode).toBe(200)
      expect(back.json().data).toMatchObject({ id, name: 'corp', enabled: true })
      expect((await call('GET', `${SIGNERS}/${id}/`)).json().data.id).toBe(id)
      const { id: _id, ...edit } = signerForm('corp-2')
      expect((await call('PUT', `${SIGNERS}/${id}//`, edit)).statusCode).toBe(200)
      expect((await call('GET', `${SIGNERS}//${id}`)).json().data.name).toBe('corp-2')
      expect((await call('DELETE', `${SIGNERS}/${id}/`)).statusCode).toBe(200)
      expect((await call('GET', `${SIGNERS}/${id}//`)).statusCode).toBe(404)
    })

    it('auth policy: the picker with limit=-1, a create with "id": "", read back, delete', async () => {
      const { call } = await console_()
      const ids: string[] = []
      for (let n = 0; n < 12; n++) {
        ids.push((await call('POST', SIGNERS, signerForm(`s${n}`))).json().data.id)
      }
      const picker = await call('GET', `${SIGNERS}?limit=-1&offset=0&sort=name%20asc`)
      expect(picker.statusCode).toBe(200)
      expect(picker.json().data).toHaveLength(12)
      expect(picker.json().meta.pagination).toEqual({ limit: -1, offset: 0, totalCount: 12 })
      const policy = {
        id: '',
        name: 'console policy',
        primary: {
          cert: { allowed: false, allowExpiredCerts: false },
          updb: {
            allowed: true,
            minPasswordLength: 5,
            requireSpecialChar: false,
            requireNumberChar: false,
            requireMixedCase: false,
            maxAttempts: 5,
            lockoutDurationMinutes: 0,
          },
          extJwt: { allowed: true, allowedSigners: [ids[0]] },
        },
        secondary: { requireTotp: false, requireExtJwtSigner: null },
        tags: {},
      }
      const created = await call('POST', POLICIES, policy)
      expect(created.statusCode).toBe(201)
      const pid = created.json().data.id as string
      const back = (await call('GET', `${POLICIES}/${pid}//`)).json().data
      expect(back.primary.extJwt.allowedSigners).toEqual([ids[0]])
      // The console's edit sends its whole form model back, the policy's own id included.
      const edit = { ...policy, id: pid, name: 'renamed' }
      expect((await call('PUT', `${POLICIES}/${pid}//`, edit)).statusCode).toBe(200)
      expect((await call('GET', `${POLICIES}/${pid}/`)).json().data.name).toBe('renamed')
      // An identity under that policy, created with an empty id and role attributes.
      const identity = await call('POST', IDENTITIES, {
        id: '',
        name: 'alice',
        type: 'User',
        isAdmin: false,
        authPolicyId: pid,
        externalId: 'alice@corp',
        roleAttributes: ['sales', 'emea'],
      })
      expect(identity.statusCode).toBe(201)
      const iid = identity.json().data.id as string
      expect((await call('GET', `${IDENTITIES}/${iid}//`)).json().data).toMatchObject({
        authPolicyId: pid,
        roleAttributes: ['sales', 'emea'],
      })
      expect((await call('DELETE', `${IDENTITIES}/${iid}//`)).statusCode).toBe(200)
      expect((await call('DELETE', `${POLICIES}/${pid}//`)).statusCode).toBe(200)
    })

    it('refuses a non-empty id and other read-only fields in create bodies, and another id on update', async () => {
      const { call } = await console_()
      for (const body of [
        signerForm('a', { id: 'chosen' }),
        signerForm('b', { createdAt: '' }),
        { id: 'x', name: 'bob' },
        { id: null, name: 'bob' },
      ]) {
        const url = 'issuer' in body ? SIGNERS : IDENTITIES
        const res = await call('POST', url, body)
        expect(res.statusCode).toBe(400)
        expect(res.json().error.code).toBe('COULD_NOT_VALIDATE')
      }
      // An empty id is dropped on create only: a PUT body still refuses it.
      const id = (await call('POST', IDENTITIES, { id: '', name: 'carol' })).json().data.id
      const put = await call('PUT', `${IDENTITIES}/${id}`, { id: '', name: 'carol' })
      expect(put.json().error.code).toBe('COULD_NOT_VALIDATE')
      // An update may repeat the path's own id (the console's policy edit does); another id is refused.
      expect((await call('PUT', `${IDENTITIES}/${id}`, { id, name: 'carol' })).statusCode).toBe(200)
      expect((await call('PATCH', `${IDENTITIES}/${id}`, { id, isAdmin: false })).statusCode).toBe(
        200,
      )
      for (const method of ['PUT', 'PATCH']) {
        const other = await call(method, `${IDENTITIES}/${id}`, {
          id: 'someone-else',
          name: 'carol',
        })
        expect(other.statusCode).toBe(400)
        expect(other.json().error.code).toBe('COULD_NOT_VALIDATE')
      }
    })

    it('takes back on an update the read-only fields of a detail, as newer consoles send them', async () => {
      const { call } = await console_()
      const made = await call('POST', POLICIES, {
        name: 'numeric',
        primary: {
          cert: { allowed: false },
          updb: { allowed: true, requireNumericChar: true },
          extJwt: { allowed: false },
        },
        secondary: {},
      })
      expect(made.statusCode, made.body).toBe(201)
      const pid = made.json().data.id as string
      const iid = (await call('POST', IDENTITIES, { name: 'dave', authPolicyId: pid })).json().data
        .id as string
      const before = (await call('GET', `${IDENTITIES}/${iid}`)).json().data
      // The console's identity edit: its form holds the detail, sent back whole but for `id`,
      // with `type` as the type's id (ziti-console-lib IdentityFormService, newer builds).
      const { id: _id, enrollment: _e, ...form } = before
      const edit = { ...form, type: before.type.id, name: 'dave-2', externalId: 'dave@corp' }
      expect(Object.keys(edit)).toEqual(
        expect.arrayContaining(['createdAt', '_links', 'authPolicy']),
      )
      const patched = await call('PATCH', `${IDENTITIES}/${iid}`, edit)
      expect(patched.statusCode, patched.body).toBe(200)
      const after = (await call('GET', `${IDENTITIES}/${iid}`)).json().data
      expect(after).toMatchObject({ name: 'dave-2', externalId: 'dave@corp', authPolicyId: pid })
      expect(after.createdAt).toBe(before.createdAt)
      expect(
        (await call('PUT', `${IDENTITIES}/${iid}`, { ...edit, name: 'dave-3' })).statusCode,
      ).toBe(200)
      // A signer and a policy edited from their details the same way.
      const sid = (await call('POST', SIGNERS, signerForm('echo'))).json().data.id as string
      const signer = (await call('GET', `${SIGNERS}/${sid}`)).json().data
      expect(
        (await call('PUT', `${SIGNERS}/${sid}`, { ...signer, name: 'echo-2' })).statusCode,
      ).toBe(200)
      expect((await call('GET', `${SIGNERS}/${sid}`)).json().data.name).toBe('echo-2')
      const policy = (await call('GET', `${POLICIES}/${pid}`)).json().data
      expect(
        (await call('PATCH', `${POLICIES}/${pid}`, { ...policy, name: 'n-2' })).statusCode,
      ).toBe(200)
      // The "Numeric" toggle's name is ignored, as upstream does; the stored rule is unchanged.
      expect(policy.primary.updb.requireNumberChar).toBe(false)
      // A name neither the body nor the detail has is still refused, and so is a create that
      // carries a detail's read-only field.
      for (const [method, url, body] of [
        ['PATCH', `${IDENTITIES}/${iid}`, { ...edit, hasApiSessions: true }],
        ['PUT', `${SIGNERS}/${sid}`, { ...signer, certificate: 'x' }],
        ['POST', IDENTITIES, { name: 'erin', createdAt: before.createdAt }],
      ] as const) {
        const res = await call(method, url, body)
        expect(res.statusCode, `${method} ${url}`).toBe(400)
        expect(res.json().error.code).toBe('COULD_NOT_VALIDATE')
      }
    })

    it('reads limit and offset as OpenZiti does on every list', async () => {
      const { call } = await console_()
      for (let n = 0; n < 12; n++) await call('POST', IDENTITIES, { name: `i${n}` })
      for (const list of [
        SIGNERS,
        POLICIES,
        IDENTITIES,
        `${M}/audit-events`,
        `${M}/identity-role-attributes`,
      ]) {
        const page = async (q: string) => {
          const res = await call('GET', `${list}?${q}`)
          expect(res.statusCode, `${list}?${q}`).toBe(200)
          return res.json().meta.pagination
        }
        if (list === `${M}/audit-events`) {
          // This service's own list, which grows by a row a login: every event at once is refused.
          const all = await call('GET', `${list}?limit=-1`)
          expect(all.json().error.code).toBe('INVALID_PAGINATION')
        } else expect(await page('limit=-1')).toMatchObject({ limit: -1, offset: 0 })
        expect(await page('limit=0')).toMatchObject({ limit: 10 })
        expect(await page('limit=-7')).toMatchObject({ limit: 10 })
        expect(await page('limit=501')).toMatchObject({ limit: 500 })
        expect(await page('offset=-3')).toMatchObject({ offset: 0 })
        for (const q of ['limit=ten', 'limit=-1.5', 'offset=x', 'offset=--1']) {
          const res = await call('GET', `${list}?${q}`)
          expect(res.json().error.code, `${list}?${q}`).toBe('INVALID_PAGINATION')
        }
      }
      const all = await call('GET', `${IDENTITIES}?limit=-1`)
      expect(all.json().data).toHaveLength(13) // and the admin
    })

    it("sorts each list by every column the console's tables sort by", async () => {
      const { call } = await console_()
      // The console's list request: its name search (empty), a page of 50, the column's sort.
      const page = async (url: string, sort: string, filter = '(name contains "")') => {
        const q = `filter=${encodeURIComponent(filter)}&limit=50&offset=0&sort=${encodeURIComponent(sort)}`
        const res = await call('GET', `${url}?${q}`)
        expect(res.statusCode, `${url} sort=${sort}`).toBe(200)
        return res.json().data as { name: string; id: string }[]
      }
      const names = (rows: { name: string }[]) => rows.map((r) => r.name)
      // Byte order, on both stores whatever the database's collation: `Mm` before `aa`.
      for (const [name, audience, enabled] of [
        ['a', 'zz', true],
        ['b', 'Mm', false],
        ['c', 'aa', true],
      ] as const) {
        const res = await call('POST', SIGNERS, signerForm(name, { audience, enabled }))
        expect(res.statusCode).toBe(201)
      }
      expect(names(await page(SIGNERS, 'audience asc'))).toEqual(['b', 'c', 'a'])
      expect(names(await page(SIGNERS, 'audience desc'))).toEqual(['a', 'c', 'b'])
      expect(names(await page(SIGNERS, 'issuer desc'))).toEqual(['c', 'b', 'a'])
      // The id breaks the tie between the two enabled signers, in either direction of the sort.
      const enabledFirst = names(await page(SIGNERS, 'enabled desc'))
      expect(enabledFirst[2]).toBe('b')
      expect(names(await page(SIGNERS, 'enabled asc'))[0]).toBe('b')
      expect(enabledFirst.slice(0, 2).sort()).toEqual(['a', 'c'])

      // Identities: the admin that logged in, and two more.
      for (const [name, isAdmin] of [
        ['ivy', false],
        ['joe', true],
      ] as const) {
        expect((await call('POST', IDENTITIES, { name, type: 'User', isAdmin })).statusCode).toBe(
          201,
        )
      }
      const admins = await page(IDENTITIES, 'isAdmin desc')
      expect(admins.at(-1)?.name).toBe('ivy')
      expect(names(await page(IDENTITIES, 'isAdmin asc'))[0]).toBe('ivy')
      // Every identity is of the type Default: a sort by type is a sort by id.
      const byId = (await page(IDENTITIES, 'id asc')).map((r) => r.id)
      expect((await page(IDENTITIES, 'type asc')).map((r) => r.id)).toEqual(byId)
      expect((await page(IDENTITIES, 'type desc')).map((r) => r.id)).toEqual(byId)

      // Policies: the default one allows every primary method; this one no certificates.
      const policy = {
        name: 'no certs',
        primary: {
          cert: { allowed: false, allowExpiredCerts: false },
          updb: { allowed: true, minPasswordLength: 5, maxAttempts: 0, lockoutDurationMinutes: 0 },
          extJwt: { allowed: true, allowedSigners: [] },
        },
        secondary: { requireTotp: false, requireExtJwtSigner: null },
      }
      expect((await call('POST', POLICIES, policy)).statusCode).toBe(201)
      expect(names(await page(POLICIES, 'primary.cert.allowed asc'))).toEqual([
        'no certs',
        'Default',
      ])
      expect(names(await page(POLICIES, 'primary.cert.allowed desc'))).toEqual([
        'Default',
        'no certs',
      ])
      for (const sort of ['primary.updb.allowed asc', 'primary.extJwt.allowed desc']) {
        expect(await page(POLICIES, sort)).toHaveLength(2)
      }
      const refused = await call(
        'GET',
        `${POLICIES}?filter=${encodeURIComponent('primary.cert.allowed = false')}`,
      )
      expect(names(refused.json().data)).toEqual(['no certs'])

      // A column no table sorts by is still refused, with the fields that are sortable.
      const bad = await call('GET', `${SIGNERS}?sort=${encodeURIComponent('certPem asc')}`)
      expect(bad.statusCode).toBe(400)
      expect(bad.json().error.code).toBe('INVALID_SORT_IDENTIFIER')
    })

    it("a session of a JWT login through the client API works on the management API (the console's OAuth callback)", async () => {
      const { app, call } = await console_()
      const { identityId, jwt } = await certSignerAndToken(
        call,
        'https://idp.console.example',
        'ops',
      )
      expect(
        (await call('PATCH', `${IDENTITIES}/${identityId}`, { isAdmin: true })).statusCode,
      ).toBe(200)
      const login = await app.inject({
        method: 'POST',
        url: '/edge/client/v1/authenticate?method=ext-jwt',
        headers: { authorization: `Bearer ${jwt}` },
      })
      expect(login.statusCode).toBe(200)
      const asOps = caller(app, login.json().data.token as string)
      const listed = await asOps('GET', `${IDENTITIES}?limit=100&offset=0`)
      expect(listed.statusCode).toBe(200)
      expect(listed.json().data.map((i: { name: string }) => i.name)).toContain('ops')
      expect((await asOps('GET', `${M}/current-identity`)).json().data).toMatchObject({
        id: identityId,
        isAdmin: true,
      })
    })

    it('logs in with the body the console sends (with rejectUnauthorized), other fields ignored', async () => {
      const app = await buildTestApp()
      for (const body of [
        { username: ADMIN_USER, password: ADMIN_PASSWORD, rejectUnauthorized: false },
        { username: ADMIN_USER, password: ADMIN_PASSWORD, someClientField: { nested: [1] } },
      ]) {
        const res = await app.inject({
          method: 'POST',
          url: `${M}/authenticate?method=password`,
          payload: body,
        })
        expect(res.statusCode).toBe(200)
        expect(res.json().data.token).toBe(res.headers['zt-session'])
        expect((await caller(app, res.json().data.token)('GET', `${SIGNERS}`)).statusCode).toBe(200)
      }
      // The known fields keep their types, and a wrong password stays refused.
      const typed = await app.inject({
        method: 'POST',
        url: `${M}/authenticate?method=password`,
        payload: { username: ADMIN_USER, password: 12, rejectUnauthorized: false },
      })
      expect(typed.statusCode).toBe(400)
      const wrong = await app.inject({
        method: 'POST',
        url: `${M}/authenticate?method=password`,
        payload: { username: ADMIN_USER, password: 'not-it-at-all', rejectUnauthorized: false },
      })
      expect(wrong.statusCode).toBe(401)
      expect(wrong.json().error.code).toBe('INVALID_AUTH')
    })

    it('answers trailing and repeated slashes on both APIs, and unknown routes 404', async () => {
      const { app, call } = await console_()
      for (const url of [`${SIGNERS}/`, `${SIGNERS}//`, `/edge//management/v1/identities/`]) {
        expect((await call('GET', url)).statusCode, url).toBe(200)
      }
      for (const url of [
        '/edge/client/v1/external-jwt-signers/',
        '//edge/client/v1//external-jwt-signers//',
        '/version/',
      ]) {
        const res = await app.inject({ method: 'GET', url })
        expect(res.statusCode, url).toBe(200)
        expect(res.headers.location).toBeUndefined()
      }
      for (const url of [`${M}/services/`, `${M}/nothing//`, '/edge/client/v1/identities/']) {
        const res = await call('GET', url)
        expect(res.statusCode, url).toBe(404)
        expect(res.json().error.code).toBe('NOT_FOUND')
      }
    })
  })
})
