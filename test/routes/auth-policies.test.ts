import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, deepJson, forEachStore, login, sendJson } from '../helpers/app.js'

const POLICIES = '/edge/management/v1/auth-policies'
const SIGNERS = '/edge/management/v1/external-jwt-signers'
const IDENTITIES = '/edge/management/v1/identities'

async function setup() {
  const app = await buildTestApp()
  const token = await login(app)
  const call = caller(app, token)
  const signer = async (name: string) =>
    (
      await call('POST', SIGNERS, {
        name,
        enabled: true,
        issuer: `https://${name}.example`,
        audience: 'ziti',
        jwksEndpoint: `https://${name}.example/jwks`,
      })
    ).json().data.id as string
  return { app, call, signer }
}

const policy = (over: Record<string, unknown> = {}) => ({
  name: 'restricted',
  primary: {
    cert: { allowed: false },
    updb: { allowed: true },
    extJwt: { allowed: true, allowedSigners: [] as string[] },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null },
  ...over,
})

forEachStore(() => {
  describe('authentication policies', () => {
    it('has a built-in default policy that can be patched but never deleted', async () => {
      const { call } = await setup()
      const d = (await call('GET', `${POLICIES}/default`)).json().data
      expect(d).toMatchObject({
        id: 'default',
        name: 'Default',
        primary: {
          updb: { allowed: true, minPasswordLength: 12, maxAttempts: 0, lockoutDurationMinutes: 0 },
          extJwt: { allowed: true, allowedSigners: [] },
          cert: { allowExpiredCerts: false },
        },
        secondary: { requireTotp: false, requireExtJwtSigner: null },
      })
      expect(
        (await call('PATCH', `${POLICIES}/default`, { primary: { cert: { allowed: false } } }))
          .statusCode,
      ).toBe(200)
      const after = (await call('GET', `${POLICIES}/default`)).json().data
      expect(after.primary).toMatchObject({
        cert: { allowed: false },
        updb: { allowed: true },
        extJwt: { allowed: true },
      })
      const del = await call('DELETE', `${POLICIES}/default`)
      expect(del.statusCode).toBe(409)
    })

    it('stores primary.cert.allowExpiredCerts as sent (false when left out)', async () => {
      const { call } = await setup()
      const cert = (over: Record<string, unknown>) => ({
        ...policy().primary,
        cert: { allowed: true, ...over },
      })
      const created = await call(
        'POST',
        POLICIES,
        policy({ primary: cert({ allowExpiredCerts: true }) }),
      )
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id
      const read = async () => (await call('GET', `${POLICIES}/${id}`)).json().data.primary.cert
      expect(await read()).toEqual({ allowed: true, allowExpiredCerts: true })
      await call('PATCH', `${POLICIES}/${id}`, { primary: { cert: { allowed: false } } })
      expect(await read()).toEqual({ allowed: false, allowExpiredCerts: true })
      await call('PATCH', `${POLICIES}/${id}`, { primary: { cert: { allowExpiredCerts: false } } })
      expect(await read()).toEqual({ allowed: false, allowExpiredCerts: false })
      await call('PUT', `${POLICIES}/${id}`, policy({ primary: cert({ allowExpiredCerts: true }) }))
      expect(await read()).toEqual({ allowed: true, allowExpiredCerts: true })
      await call('PUT', `${POLICIES}/${id}`, policy({ primary: cert({}) }))
      expect(await read()).toEqual({ allowed: true, allowExpiredCerts: false })
    })

    it('creates, lists, replaces and patches at any depth', async () => {
      const { call, signer } = await setup()
      const a = await signer('a')
      const b = await signer('b')
      const created = await call(
        'POST',
        POLICIES,
        policy({
          primary: { ...policy().primary, extJwt: { allowed: true, allowedSigners: [a] } },
          secondary: { requireExtJwtSigner: b },
        }),
      )
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id
      let d = (await call('GET', `${POLICIES}/${id}`)).json().data
      expect(d.primary.extJwt.allowedSigners).toEqual([a])
      expect(d.secondary.requireExtJwtSigner).toBe(b)

      expect(
        (await call('PATCH', `${POLICIES}/${id}`, { primary: { updb: { allowed: false } } }))
          .statusCode,
      ).toBe(200)
      d = (await call('GET', `${POLICIES}/${id}`)).json().data
      expect(d.primary.updb.allowed).toBe(false)
      expect(d.primary.extJwt.allowedSigners).toEqual([a])
      expect(d.name).toBe('restricted')

      // tags, unlike primary and secondary, are replaced whole; a PATCH without them keeps them.
      await call('PATCH', `${POLICIES}/${id}`, { tags: { team: 'a', env: 'prod' } })
      await call('PATCH', `${POLICIES}/${id}`, { tags: { env: 'test' } })
      expect((await call('GET', `${POLICIES}/${id}`)).json().data.tags).toEqual({ env: 'test' })
      await call('PATCH', `${POLICIES}/${id}`, { name: 'restricted' })
      expect((await call('GET', `${POLICIES}/${id}`)).json().data.tags).toEqual({ env: 'test' })

      expect(
        (await call('PUT', `${POLICIES}/${id}`, policy({ name: 'replaced' }))).statusCode,
      ).toBe(200)
      d = (await call('GET', `${POLICIES}/${id}`)).json().data
      expect(d).toMatchObject({ name: 'replaced', secondary: { requireExtJwtSigner: null } })
      expect(d.primary.extJwt.allowedSigners).toEqual([])

      const list = (
        await call('GET', `${POLICIES}?filter=${encodeURIComponent('name = "replaced"')}`)
      ).json()
      expect(list.data.map((p: { id: string }) => p.id)).toEqual([id])
    })

    it.each(['name', 'primary', 'secondary'])('requires %s on create and PUT', async (field) => {
      const { call } = await setup()
      const body: Record<string, unknown> = policy()
      delete body[field]
      const res = await call('POST', POLICIES, body)
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } })
    })

    it('refuses requireTotp true with INVALID_FIELD', async () => {
      const { call } = await setup()
      const res = await call('POST', POLICIES, policy({ secondary: { requireTotp: true } }))
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({
        code: 'INVALID_FIELD',
        cause: { field: 'secondary.requireTotp' },
      })
    })

    it('refuses unknown signers with 404 naming the field', async () => {
      const { call } = await setup()
      const primary = await call(
        'POST',
        POLICIES,
        policy({
          primary: { ...policy().primary, extJwt: { allowed: true, allowedSigners: ['ghost'] } },
        }),
      )
      expect(primary.statusCode).toBe(404)
      expect(primary.json().error).toMatchObject({
        code: 'NOT_FOUND',
        cause: { field: 'primary.extJwt.allowedSigners' },
      })
      const secondary = await call(
        'POST',
        POLICIES,
        policy({ secondary: { requireExtJwtSigner: 'ghost' } }),
      )
      expect(secondary.statusCode).toBe(404)
      expect(secondary.json().error).toMatchObject({
        code: 'NOT_FOUND',
        cause: { field: 'secondary.requireExtJwtSigner' },
      })
    })

    it('refuses deleting a referenced signer until the policy lets go, in both fields', async () => {
      const { call, signer } = await setup()
      const a = await signer('a')
      const b = await signer('b')
      const id = (
        await call(
          'POST',
          POLICIES,
          policy({
            primary: { ...policy().primary, extJwt: { allowed: true, allowedSigners: [a] } },
            secondary: { requireExtJwtSigner: b },
          }),
        )
      ).json().data.id

      const delA = await call('DELETE', `${SIGNERS}/${a}`)
      expect(delA.statusCode).toBe(409)
      expect(delA.json().error).toMatchObject({
        code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
        cause: { field: 'primary.extJwt.allowedSigners' },
      })
      const delB = await call('DELETE', `${SIGNERS}/${b}`)
      expect(delB.json().error).toMatchObject({
        code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
        cause: { field: 'secondary.requireExtJwtSigner' },
      })

      await call('PATCH', `${POLICIES}/${id}`, { primary: { extJwt: { allowedSigners: [] } } })
      expect((await call('DELETE', `${SIGNERS}/${a}`)).statusCode).toBe(200)
      await call('PATCH', `${POLICIES}/${id}`, { secondary: { requireExtJwtSigner: '' } })
      expect((await call('DELETE', `${SIGNERS}/${b}`)).statusCode).toBe(200)
      expect((await call('GET', `${SIGNERS}/${a}`)).statusCode).toBe(404)
    })

    it('refuses deleting a policy an identity uses, and allows it after', async () => {
      const { call } = await setup()
      const pid = (await call('POST', POLICIES, policy())).json().data.id
      const iid = (await call('POST', IDENTITIES, { name: 'alice', authPolicyId: pid })).json().data
        .id
      const del = await call('DELETE', `${POLICIES}/${pid}`)
      expect(del.statusCode).toBe(409)
      expect(del.json().error).toMatchObject({
        code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
        cause: { field: 'authPolicyId' },
      })
      await call('PATCH', `${IDENTITIES}/${iid}`, { authPolicyId: 'default' })
      expect((await call('DELETE', `${POLICIES}/${pid}`)).statusCode).toBe(200)
      expect((await call('GET', `${POLICIES}/${pid}`)).statusCode).toBe(404)
    })

    it('applies the policy password rules when setting a password', async () => {
      const { call } = await setup()
      const pid = (
        await call(
          'POST',
          POLICIES,
          policy({
            primary: {
              ...policy().primary,
              updb: { allowed: true, minPasswordLength: 16, requireNumberChar: true },
            },
          }),
        )
      ).json().data.id
      const iid = (await call('POST', IDENTITIES, { name: 'alice', authPolicyId: pid })).json().data
        .id
      expect(
        (await call('PUT', `${IDENTITIES}/${iid}/password`, { password: 'fifteen-chars-x' }))
          .statusCode,
      ).toBe(400)
      expect(
        (await call('PUT', `${IDENTITIES}/${iid}/password`, { password: 'sixteen-chars-xy' }))
          .statusCode,
      ).toBe(400)
      expect(
        (await call('PUT', `${IDENTITIES}/${iid}/password`, { password: 'sixteen-chars-x1' }))
          .statusCode,
      ).toBe(200)
    })

    it('refuses tags nested deeper than 32 levels on create, PUT and PATCH, naming the field', async () => {
      const app = await buildTestApp()
      const token = await login(app)
      const body = (tags: string) =>
        `{"name":"deep","primary":{"cert":{"allowed":false},"updb":{"allowed":true},"extJwt":{"allowed":true,"allowedSigners":[]}},"secondary":{"requireTotp":false,"requireExtJwtSigner":null},"tags":${tags}}`
      const ok = await sendJson(app, token, 'POST', POLICIES, body(deepJson(32)))
      expect(ok.statusCode).toBe(201)
      const id = ok.json().data.id
      const refused = [
        await sendJson(app, token, 'POST', POLICIES, body(deepJson(40))),
        await sendJson(app, token, 'PUT', `${POLICIES}/${id}`, body(deepJson(40))),
        await sendJson(app, token, 'PATCH', `${POLICIES}/${id}`, `{"tags":${deepJson(33)}}`),
      ]
      for (const res of refused) {
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({
          code: 'COULD_NOT_VALIDATE',
          cause: { field: 'tags' },
        })
      }
      const stored = await caller(app, token)('GET', `${POLICIES}/${id}`)
      expect(stored.json().data.tags).toEqual(JSON.parse(deepJson(32)))
    })
  })
})
