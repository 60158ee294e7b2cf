import { createHash, X509Certificate } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  buildTestApp,
  deepJson,
  forEachStore,
  login,
  refusedNames,
  sendJson,
} from '../helpers/app.js'
import { makeCert, privateKeyPem, type TestCert } from '../helpers/certs.js'

const PATHS = ['/edge/management/v1/external-jwt-signers', '/edge/management/v1/ext-jwt-signers']

let rsa: TestCert
let ec: TestCert
let ed: TestCert
let weak: TestCert
let keyPem: string
beforeAll(async () => {
  keyPem = privateKeyPem()
  ;[rsa, ec, ed, weak] = await Promise.all([
    makeCert({ kind: 'RS256', cn: 'rsa signer' }),
    makeCert({ kind: 'ES256', cn: 'ec signer' }),
    makeCert({ kind: 'EdDSA', cn: 'ed signer' }),
    makeCert({ kind: 'RSA1024' }),
  ])
})

async function setup() {
  const app = await buildTestApp()
  const token = await login(app)
  return { app, token }
}

function call(app: FastifyInstance, token: string, method: string, url: string, payload?: unknown) {
  return app.inject({
    method: method as 'GET',
    url,
    headers: { 'zt-session': token },
    ...(payload === undefined ? {} : { payload: payload as object }),
  })
}

const certBody = (over: Record<string, unknown> = {}) => ({
  name: 'corp cert',
  enabled: true,
  issuer: 'https://idp.corp.example',
  audience: 'ziti',
  certPem: rsa.certPem,
  kid: 'key-1',
  ...over,
})

const jwksBody = (over: Record<string, unknown> = {}) => ({
  name: 'corp jwks',
  enabled: true,
  issuer: 'https://login.corp.example',
  audience: 'ziti',
  jwksEndpoint: 'https://login.corp.example/jwks',
  ...over,
})

/** Each verb on a signer's path, with a body where it takes one. */
const EVERY_VERB = [
  ['GET', undefined],
  ['DELETE', undefined],
  ['PATCH', { name: 'x' }],
  ['PUT', jwksBody()],
] as const

forEachStore(() => {
  describe.each(PATHS)('signer management at %s', (base) => {
    it('creates a certificate signer with derived fields and reads it back', async () => {
      const { app, token } = await setup()
      const res = await call(app, token, 'POST', base, certBody({ tags: { team: 'a' } }))
      expect(res.statusCode).toBe(201)
      const { id, _links } = res.json().data
      expect(_links.self.href).toBe(`./external-jwt-signers/${id}`)
      expect(res.json().meta).toEqual({})

      const detail = await call(app, token, 'GET', `${base}/${id}`)
      expect(detail.statusCode).toBe(200)
      const d = detail.json().data
      const x509 = new X509Certificate(rsa.certPem)
      expect(d).toMatchObject({
        id,
        name: 'corp cert',
        enabled: true,
        issuer: 'https://idp.corp.example',
        audience: 'ziti',
        certPem: rsa.certPem,
        kid: 'key-1',
        jwksEndpoint: null,
        claimsProperty: 'sub',
        useExternalId: false,
        externalAuthUrl: null,
        clientId: null,
        scopes: null,
        targetToken: 'ACCESS',
        commonName: 'rsa signer',
        fingerprint: createHash('sha1').update(x509.raw).digest('hex'),
        notBefore: '2020-01-01T00:00:00.000Z',
        notAfter: '2040-01-01T00:00:00.000Z',
        tags: { team: 'a' },
      })
      expect(d.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(d.updatedAt).toBe(d.createdAt)
    })

    it('creates a JWKS signer with the OpenZiti extras and returns them', async () => {
      const { app, token } = await setup()
      const res = await call(
        app,
        token,
        'POST',
        base,
        jwksBody({
          clientId: 'ziti-client',
          scopes: ['openid', 'email'],
          targetToken: 'ID',
          claimsProperty: '/ext/user',
          useExternalId: true,
          externalAuthUrl: 'https://login.corp.example/authorize',
        }),
      )
      expect(res.statusCode).toBe(201)
      const d = (await call(app, token, 'GET', `${base}/${res.json().data.id}`)).json().data
      expect(d).toMatchObject({
        jwksEndpoint: 'https://login.corp.example/jwks',
        certPem: null,
        kid: null,
        clientId: 'ziti-client',
        scopes: ['openid', 'email'],
        targetToken: 'ID',
        claimsProperty: '/ext/user',
        useExternalId: true,
        commonName: '',
        fingerprint: null,
      })
      // The app fetches the keys in the background; the test resolver refuses the name, so nothing
      // leaves the machine.
      for (let i = 0; i < 50 && !refusedNames.includes('login.corp.example'); i++) {
        await new Promise((r) => setTimeout(r, 10))
      }
      expect(refusedNames).toContain('login.corp.example')
    })

    it('accepts EC and Ed25519 certificates', async () => {
      const { app, token } = await setup()
      for (const [i, cert] of [ec, ed].entries()) {
        const res = await call(
          app,
          token,
          'POST',
          base,
          certBody({ name: `n${i}`, issuer: `i${i}`, kid: `k${i}`, certPem: cert.certPem }),
        )
        expect(res.statusCode).toBe(201)
        const { id } = res.json().data
        expect(res.json()).toEqual({
          data: { id, _links: { self: { href: `./external-jwt-signers/${id}` } } },
          meta: {},
        })
        const stored = (await call(app, token, 'GET', `${base}/${id}`)).json().data
        const x509 = new X509Certificate(cert.certPem)
        expect(stored).toMatchObject({
          id,
          name: `n${i}`,
          issuer: `i${i}`,
          kid: `k${i}`,
          certPem: cert.certPem,
          jwksEndpoint: null,
          commonName: i === 0 ? 'ec signer' : 'ed signer',
          fingerprint: createHash('sha1').update(x509.raw).digest('hex'),
          notBefore: new Date(x509.validFrom).toISOString(),
          notAfter: new Date(x509.validTo).toISOString(),
        })
      }
      const list = (await call(app, token, 'GET', `${base}?sort=name`)).json()
      expect(list.data.map((d: { kid: string }) => d.kid)).toEqual(['k0', 'k1'])
      expect(list.meta.pagination.totalCount).toBe(2)
    })

    it('PUT replaces: omitted optional fields return to their defaults', async () => {
      const { app, token } = await setup()
      const body = jwksBody({ clientId: 'c', scopes: ['s'], useExternalId: true, tags: { a: 1 } })
      const id = (await call(app, token, 'POST', base, body)).json().data.id
      const put = await call(app, token, 'PUT', `${base}/${id}`, jwksBody({ name: 'renamed' }))
      expect(put.statusCode).toBe(200)
      expect(put.json()).toEqual({ data: {}, meta: {} })
      const d = (await call(app, token, 'GET', `${base}/${id}`)).json().data
      expect(d).toMatchObject({
        name: 'renamed',
        clientId: null,
        scopes: null,
        useExternalId: false,
        tags: {},
        targetToken: 'ACCESS',
      })
    })

    it('PATCH changes only the keys present, and null clears or resets', async () => {
      const { app, token } = await setup()
      const body = jwksBody({ clientId: 'c', tags: { a: 'x' }, targetToken: 'ID' })
      const id = (await call(app, token, 'POST', base, body)).json().data.id
      expect((await call(app, token, 'PATCH', `${base}/${id}`, { name: 'p1' })).statusCode).toBe(
        200,
      )
      let d = (await call(app, token, 'GET', `${base}/${id}`)).json().data
      expect(d).toMatchObject({ name: 'p1', clientId: 'c', tags: { a: 'x' }, targetToken: 'ID' })

      const cleared = await call(app, token, 'PATCH', `${base}/${id}`, {
        clientId: null,
        targetToken: null,
        tags: { b: true },
      })
      expect(cleared.statusCode).toBe(200)
      d = (await call(app, token, 'GET', `${base}/${id}`)).json().data
      expect(d).toMatchObject({
        name: 'p1',
        clientId: null,
        targetToken: 'ACCESS',
        tags: { b: true },
      })
    })

    it('PATCH from JWKS to certificate must clear jwksEndpoint; the merged record is checked', async () => {
      const { app, token } = await setup()
      const id = (await call(app, token, 'POST', base, jwksBody())).json().data.id
      const both = await call(app, token, 'PATCH', `${base}/${id}`, {
        certPem: rsa.certPem,
        kid: 'k',
      })
      expect(both.statusCode).toBe(400)
      expect(both.json().error.code).toBe('INVALID_FIELD')
      const ok = await call(app, token, 'PATCH', `${base}/${id}`, {
        certPem: rsa.certPem,
        kid: 'k',
        jwksEndpoint: null,
      })
      expect(ok.statusCode).toBe(200)
      const d = (await call(app, token, 'GET', `${base}/${id}`)).json().data
      expect(d).toMatchObject({ jwksEndpoint: null, kid: 'k', commonName: 'rsa signer' })
    })

    it('deletes, then answers 404 on every verb for that id', async () => {
      const { app, token } = await setup()
      const id = (await call(app, token, 'POST', base, jwksBody())).json().data.id
      const del = await call(app, token, 'DELETE', `${base}/${id}`)
      expect(del.statusCode).toBe(200)
      expect(del.json()).toEqual({ data: {}, meta: {} })
      for (const [method, payload] of EVERY_VERB) {
        const res = await call(app, token, method, `${base}/${id}`, payload)
        expect(res.statusCode).toBe(404)
        expect(res.json().error.code).toBe('NOT_FOUND')
      }
    })
  })

  describe('ids no signer has', () => {
    it('answers 404 NOT_FOUND on every verb whatever the id length the router takes', async () => {
      const { app, token } = await setup()
      for (const id of ['x', 'a'.repeat(65), 'b'.repeat(100)]) {
        for (const [method, payload] of EVERY_VERB) {
          const res = await call(app, token, method, `${PATHS[0]}/${id}`, payload)
          expect(res.statusCode, `${method} ${id.length}`).toBe(404)
          expect(res.json().error.code).toBe('NOT_FOUND')
        }
      }
    })
  })

  describe('signer validation rules', () => {
    const base = PATHS[0] as string

    it.each(['name', 'enabled', 'issuer', 'audience'])(
      'requires %s on create and PUT',
      async (field) => {
        const { app, token } = await setup()
        const body: Record<string, unknown> = jwksBody()
        delete body[field]
        const res = await call(app, token, 'POST', base, body)
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } })
        const id = (await call(app, token, 'POST', base, jwksBody())).json().data.id
        const put = await call(app, token, 'PUT', `${base}/${id}`, body)
        expect(put.statusCode).toBe(400)
        expect(put.json().error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } })
      },
    )

    it.each([
      ['both key sources', { certPem: 'x', kid: 'k' }, 'jwksEndpoint'],
      ['neither key source', { jwksEndpoint: undefined }, 'certPem'],
      ['kid with a JWKS endpoint', { kid: 'k' }, 'kid'],
    ])('refuses %s with INVALID_FIELD', async (_name, over, field) => {
      const { app, token } = await setup()
      const res = await call(app, token, 'POST', base, jwksBody(over))
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({ code: 'INVALID_FIELD', cause: { field } })
    })

    it('requires kid with certPem', async () => {
      const { app, token } = await setup()
      const res = await call(app, token, 'POST', base, certBody({ kid: undefined }))
      expect(res.json().error).toMatchObject({ code: 'INVALID_FIELD', cause: { field: 'kid' } })
    })

    it('refuses certificates that are not exactly one usable public certificate', async () => {
      const { app, token } = await setup()
      const cases = [
        'not a pem',
        keyPem,
        `${rsa.certPem}\n${ec.certPem}`,
        `${rsa.certPem}\n${keyPem}`,
        weak.certPem,
        rsa.certPem.replace(/[A-Z]{10}/, 'AAAAAAAAAA'),
      ]
      for (const certPem of cases) {
        const res = await call(app, token, 'POST', base, certBody({ certPem }))
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({
          code: 'INVALID_CERT_PEM',
          cause: { field: 'certPem' },
        })
      }
    })

    it.each([
      ['jwksEndpoint', 'not a url', 'INVALID_FIELD'],
      ['jwksEndpoint', 'file:///etc/passwd', 'INVALID_FIELD'],
      ['jwksEndpoint', '/relative/jwks', 'INVALID_FIELD'],
      ['externalAuthUrl', 'ftp://idp.example/', 'COULD_NOT_VALIDATE'],
      ['externalAuthUrl', 'not a url', 'COULD_NOT_VALIDATE'],
    ])('refuses %s %s with %s', async (field, value, code) => {
      const { app, token } = await setup()
      const res = await call(app, token, 'POST', base, jwksBody({ [field]: value }))
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({ code, cause: { field } })
    })

    it.each([
      ['name', 'corp jwks'],
      ['issuer', 'https://login.corp.example'],
    ])('keeps %s unique on create and on update', async (field, value) => {
      const { app, token } = await setup()
      expect((await call(app, token, 'POST', base, jwksBody())).statusCode).toBe(201)
      const other = jwksBody({ name: 'other', issuer: 'https://other.example' })
      const dup = await call(app, token, 'POST', base, { ...other, [field]: value })
      expect(dup.statusCode).toBe(400)
      expect(dup.json().error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } })

      const id = (await call(app, token, 'POST', base, other)).json().data.id
      const patch = await call(app, token, 'PATCH', `${base}/${id}`, { [field]: value })
      expect(patch.statusCode).toBe(400)
      expect(patch.json().error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } })
      const put = await call(app, token, 'PUT', `${base}/${id}`, { ...other, [field]: value })
      expect(put.statusCode).toBe(400)
      const d = (await call(app, token, 'GET', `${base}/${id}`)).json().data
      expect(d[field]).not.toBe(value)
    })

    it('keeps kid unique across certificate signers', async () => {
      const { app, token } = await setup()
      expect((await call(app, token, 'POST', base, certBody())).statusCode).toBe(201)
      const dup = await call(
        app,
        token,
        'POST',
        base,
        certBody({ name: 'b', issuer: 'b', certPem: ec.certPem }),
      )
      expect(dup.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'kid' },
      })
    })

    // OpenZiti: the fingerprint is unique where present (reference §1.3.5).
    it('keeps a certificate to one signer, on create and on update', async () => {
      const { app, token } = await setup()
      const first = await call(app, token, 'POST', base, certBody())
      expect(first.statusCode).toBe(201)
      const dup = await call(
        app,
        token,
        'POST',
        base,
        certBody({ name: 'b', issuer: 'b', kid: 'k2' }),
      )
      expect(dup.statusCode).toBe(400)
      expect(dup.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: {
          field: 'certPem',
          reason: expect.stringMatching(
            /^another signer already has this certificate \(fingerprint [0-9a-f]{40}\)$/,
          ),
        },
      })
      const other = await call(
        app,
        token,
        'POST',
        base,
        certBody({ name: 'c', issuer: 'c', kid: 'k3', certPem: ec.certPem }),
      )
      expect(other.statusCode).toBe(201)
      const otherId = other.json().data.id
      const moved = await call(app, token, 'PATCH', `${base}/${otherId}`, { certPem: rsa.certPem })
      expect(moved.statusCode).toBe(400)
      expect(moved.json().error.cause.field).toBe('certPem')
      // The signer's own certificate again, and other fields, are no conflict.
      const same = await call(app, token, 'PATCH', `${base}/${otherId}`, {
        certPem: ec.certPem,
        name: 'c2',
      })
      expect(same.statusCode).toBe(200)
      const list = await call(
        app,
        token,
        'GET',
        `${base}?filter=${encodeURIComponent('name contains "c"')}`,
      )
      expect(
        list
          .json()
          .data.map((s: { name: string }) => s.name)
          .sort(),
      ).toEqual(['c2', 'corp cert'])
    })

    // Unknown fields and wrong JSON types are COULD_NOT_VALIDATE (issue 2), naming the field; a body
    // that is not JSON is COULD_NOT_PARSE_BODY (below).
    it.each([
      [{ surprise: 1 }, 'surprise', 'COULD_NOT_VALIDATE'],
      [{ enabled: 'yes' }, 'enabled', 'COULD_NOT_VALIDATE'],
      [{ name: 42 }, 'name', 'COULD_NOT_VALIDATE'],
      [{ name: '' }, 'name', 'COULD_NOT_VALIDATE'],
      [{ scopes: 'openid' }, 'scopes', 'COULD_NOT_VALIDATE'],
      [{ targetToken: 'REFRESH' }, 'targetToken', 'COULD_NOT_VALIDATE'],
      [{ tags: [] }, 'tags', 'COULD_NOT_VALIDATE'],
    ])('refuses unknown fields and wrong types: %o', async (over, field, code) => {
      const { app, token } = await setup()
      const res = await call(app, token, 'POST', base, jwksBody(over))
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe(code)
      expect(res.json().error.cause.field).toBe(field)
    })

    it('refuses a name, issuer or audience of only spaces on create, PUT and PATCH, naming the field', async () => {
      const { app, token } = await setup()
      const id = (await call(app, token, 'POST', base, jwksBody())).json().data.id
      for (const field of ['name', 'issuer', 'audience']) {
        for (const [method, url, body] of [
          ['POST', base, jwksBody({ [field]: ' \t ' })],
          ['PUT', `${base}/${id}`, jwksBody({ [field]: '   ' })],
          ['PATCH', `${base}/${id}`, { [field]: '\u00a0' }],
        ] as const) {
          const res = await call(app, token, method, url, body)
          expect(res.statusCode, `${method} ${field}`).toBe(400)
          expect(res.json().error).toMatchObject({
            code: 'COULD_NOT_VALIDATE',
            cause: { field, reason: 'must not be blank' },
          })
        }
      }
      const kept = (await call(app, token, 'GET', `${base}/${id}`)).json().data
      expect(kept).toMatchObject({ name: jwksBody().name, issuer: jwksBody().issuer })
    })

    it('refuses null for a required field in PATCH', async () => {
      const { app, token } = await setup()
      const id = (await call(app, token, 'POST', base, jwksBody())).json().data.id
      const res = await call(app, token, 'PATCH', `${base}/${id}`, { issuer: null })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'issuer' },
      })
    })

    it('answers malformed JSON with COULD_NOT_PARSE_BODY and oversized bodies with 413', async () => {
      const { app, token } = await setup()
      const bad = await app.inject({
        method: 'POST',
        url: base,
        headers: { 'zt-session': token, 'content-type': 'application/json' },
        payload: '{"name": ',
      })
      expect(bad.statusCode).toBe(400)
      expect(bad.json().error.code).toBe('COULD_NOT_PARSE_BODY')
      const big = await app.inject({
        method: 'POST',
        url: base,
        headers: { 'zt-session': token, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...jwksBody(), certPem: 'x'.repeat(1024 * 1024 + 10) }),
      })
      expect(big.statusCode).toBe(413)
      expect(big.json().error.code).toBe('REQUEST_ENTITY_TOO_LARGE')
    })

    it('refuses tags nested deeper than 32 levels on create, PUT and PATCH, naming the field', async () => {
      const { app, token } = await setup()
      const base = PATHS[0] as string
      const fields = (tags: string) =>
        `"name":"deep","enabled":true,"issuer":"https://deep.example","audience":"a","jwksEndpoint":"https://deep.example/j","tags":${tags}`
      const ok = await sendJson(app, token, 'POST', base, `{${fields(deepJson(32))}}`)
      expect(ok.statusCode).toBe(201)
      const id = ok.json().data.id
      for (const [method, url] of [
        ['POST', base],
        ['PUT', `${base}/${id}`],
      ] as const) {
        const res = await sendJson(app, token, method, url, `{${fields(deepJson(40))}}`)
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({
          code: 'COULD_NOT_VALIDATE',
          cause: { field: 'tags' },
        })
      }
      const patch = await sendJson(app, token, 'PATCH', `${base}/${id}`, `{"tags":${deepJson(33)}}`)
      expect(patch.statusCode).toBe(400)
      expect(patch.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'tags' },
      })
      const list = (await call(app, token, 'GET', base)).json()
      expect(list.data.map((d: { name: string }) => d.name)).toEqual(['deep'])
      expect(list.data[0].tags).toEqual(JSON.parse(deepJson(32)))
    })

    it('creates a signer from the body `ziti edge create ext-jwt-signer` sends by default', async () => {
      const { app, token } = await setup()
      const base = PATHS[1] as string
      const res = await call(app, token, 'POST', base, {
        name: 'cli',
        enabled: true,
        issuer: 'https://cli.example',
        audience: 'ziti',
        jwksEndpoint: 'https://cli.example/jwks',
        claimsProperty: 'sub',
        useExternalId: true,
        externalAuthUrl: '',
        scopes: null,
        tags: {},
      })
      expect(res.statusCode).toBe(201)
      const d = (await call(app, token, 'GET', `${base}/${res.json().data.id}`)).json().data
      expect(d).toMatchObject({
        externalAuthUrl: null,
        scopes: null,
        tags: {},
        useExternalId: true,
      })
      const client = await app.inject({
        method: 'GET',
        url: '/edge/client/v1/external-jwt-signers',
      })
      expect(client.json().data).toEqual([])
    })

    it('reads "" in an optional text field as not set, on create, PUT and PATCH', async () => {
      const { app, token } = await setup()
      const base = PATHS[0] as string
      const empty = { externalAuthUrl: '', clientId: '', claimsProperty: '' }
      const created = await call(
        app,
        token,
        'POST',
        base,
        jwksBody({ ...empty, kid: '', certPem: '' }),
      )
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id
      const read = async () => (await call(app, token, 'GET', `${base}/${id}`)).json().data
      const unset = {
        externalAuthUrl: null,
        clientId: null,
        claimsProperty: 'sub',
        kid: null,
        certPem: null,
      }
      expect(await read()).toMatchObject(unset)

      const full = {
        externalAuthUrl: 'https://login.corp.example/auth',
        clientId: 'c',
        claimsProperty: 'email',
      }
      expect((await call(app, token, 'PATCH', `${base}/${id}`, full)).statusCode).toBe(200)
      const clientList = async () =>
        (await app.inject({ method: 'GET', url: '/edge/client/v1/external-jwt-signers' })).json()
          .data
      expect(await clientList()).toHaveLength(1)
      expect((await call(app, token, 'PATCH', `${base}/${id}`, empty)).statusCode).toBe(200)
      expect(await read()).toMatchObject(unset)
      expect(await clientList()).toEqual([])

      expect((await call(app, token, 'PUT', `${base}/${id}`, jwksBody(full))).statusCode).toBe(200)
      expect(await read()).toMatchObject(full)
      const put = await call(app, token, 'PUT', `${base}/${id}`, jwksBody({ ...empty, kid: '' }))
      expect(put.statusCode).toBe(200)
      expect(await read()).toMatchObject(unset)

      // A certificate signer with jwksEndpoint "" is a certificate signer; required fields stay required.
      const cert = await call(
        app,
        token,
        'POST',
        base,
        certBody({ jwksEndpoint: '', externalAuthUrl: '' }),
      )
      expect(cert.statusCode).toBe(201)
      const noName = await call(app, token, 'POST', base, jwksBody({ name: '', issuer: 'other' }))
      expect(noName.statusCode).toBe(400)
      expect(noName.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'name' },
      })
    })
  })
})
