import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, login } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { type Contract, loadContract, SPEC_AVAILABLE, SPEC_DIR } from './edge-api-spec.js'

if (!SPEC_AVAILABLE) {
  console.warn(
    `contract test skipped: no edge API spec at ${SPEC_DIR}; set EDGE_API_SPEC_DIR to a folder with management.yml and client.yml to run it`,
  )
}

let management: Contract
let client: Contract
let cert: TestCert
beforeAll(async () => {
  if (!SPEC_AVAILABLE) return
  management = loadContract('management')
  client = loadContract('client')
  cert = await makeCert()
})

const M = '/edge/management/v1'

/** Calls a route and checks status, JSON content type and the body against the spec. */
async function expectContract(
  app: FastifyInstance,
  contract: Contract,
  specPath: string,
  request: { method: string; url: string; headers?: Record<string, string>; payload?: unknown },
  status: number,
) {
  const res = await app.inject({
    method: request.method as 'GET',
    url: request.url,
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.payload === undefined ? {} : { payload: request.payload as object }),
  })
  expect(res.statusCode, res.body).toBe(status)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  const body = res.json()
  expect(
    contract.check(specPath, request.method.toLowerCase(), status, body),
    `${request.method} ${request.url}`,
  ).toEqual([])
  return body
}

describe.skipIf(!SPEC_AVAILABLE)('responses conform to the edge API specification', () => {
  it('signers: create, detail (certificate and JWKS), list, update, patch, delete, and the client list', async () => {
    const app = await buildTestApp()
    const headers = { 'zt-session': await login(app) }
    const certSigner = await expectContract(
      app,
      management,
      '/external-jwt-signers',
      {
        method: 'POST',
        url: `${M}/external-jwt-signers`,
        headers,
        payload: {
          name: 'cert',
          enabled: true,
          issuer: 'https://c',
          audience: 'a',
          certPem: cert.certPem,
          kid: 'k',
          clientId: 'cid',
          scopes: ['openid'],
          targetToken: 'ID',
          externalAuthUrl: 'https://c/auth',
        },
      },
      201,
    )
    const jwks = await expectContract(
      app,
      management,
      '/external-jwt-signers',
      {
        method: 'POST',
        url: `${M}/external-jwt-signers`,
        headers,
        payload: {
          name: 'jwks',
          enabled: true,
          issuer: 'https://j',
          audience: 'a',
          jwksEndpoint: 'https://j.example/jwks',
          enrollToCertEnabled: false,
        },
      },
      201,
    )
    for (const id of [certSigner.data.id, jwks.data.id]) {
      await expectContract(
        app,
        management,
        '/external-jwt-signers/{id}',
        { method: 'GET', url: `${M}/external-jwt-signers/${id}`, headers },
        200,
      )
    }
    await expectContract(
      app,
      management,
      '/external-jwt-signers',
      { method: 'GET', url: `${M}/external-jwt-signers`, headers },
      200,
    )
    await expectContract(
      app,
      management,
      '/external-jwt-signers/{id}',
      {
        method: 'PUT',
        url: `${M}/external-jwt-signers/${jwks.data.id}`,
        headers,
        payload: {
          name: 'jwks2',
          enabled: true,
          issuer: 'https://j',
          audience: 'a',
          jwksEndpoint: 'https://j.example/jwks',
        },
      },
      200,
    )
    await expectContract(
      app,
      management,
      '/external-jwt-signers/{id}',
      {
        method: 'PATCH',
        url: `${M}/external-jwt-signers/${jwks.data.id}`,
        headers,
        payload: { enabled: false },
      },
      200,
    )
    await expectContract(
      app,
      client,
      '/external-jwt-signers',
      { method: 'GET', url: '/edge/client/v1/external-jwt-signers' },
      200,
    )
    await expectContract(
      app,
      management,
      '/external-jwt-signers/{id}',
      { method: 'DELETE', url: `${M}/external-jwt-signers/${jwks.data.id}`, headers },
      200,
    )
  })

  it('sessions: password login, ext-jwt login, current-api-session on both APIs and current-identity', async () => {
    const app = await buildTestApp()
    const session = await expectContract(
      app,
      management,
      '/authenticate',
      {
        method: 'POST',
        url: `${M}/authenticate?method=password`,
        payload: { username: 'admin', password: 'admin-password-123' },
      },
      200,
    )
    const headers = { 'zt-session': session.data.token as string }
    expect(session.data.authenticatorId).toBe('updb')
    await expectContract(
      app,
      management,
      '/current-api-session',
      { method: 'GET', url: `${M}/current-api-session`, headers },
      200,
    )
    await expectContract(
      app,
      client,
      '/current-api-session',
      { method: 'GET', url: '/edge/client/v1/current-api-session', headers },
      200,
    )
    await expectContract(
      app,
      client,
      '/current-identity',
      { method: 'GET', url: '/edge/client/v1/current-identity', headers },
      200,
    )
    await expectContract(
      app,
      management,
      '/current-identity',
      { method: 'GET', url: `${M}/current-identity`, headers },
      200,
    )
    await app.inject({
      method: 'POST',
      url: `${M}/external-jwt-signers`,
      headers,
      payload: {
        name: 's',
        enabled: true,
        issuer: 'https://s',
        audience: 'a',
        certPem: cert.certPem,
        kid: 'k',
      },
    })
    const jwt = await signJwt(
      cert.privateKey,
      { iss: 'https://s', aud: 'a', sub: session.data.identityId },
      { kid: 'k' },
    )
    await expectContract(
      app,
      client,
      '/authenticate',
      {
        method: 'POST',
        url: '/edge/client/v1/authenticate?method=ext-jwt',
        headers: { authorization: `Bearer ${jwt}` },
      },
      200,
    )
  })

  it('identities and auth policies: create, detail and list, with OpenZiti-shaped bodies', async () => {
    const app = await buildTestApp()
    const headers = { 'zt-session': await login(app) }
    const policy = await expectContract(
      app,
      management,
      '/auth-policies',
      {
        method: 'POST',
        url: `${M}/auth-policies`,
        headers,
        payload: {
          name: 'full shape',
          primary: {
            cert: { allowed: true, allowExpiredCerts: false },
            updb: {
              allowed: true,
              minPasswordLength: 5,
              requireSpecialChar: false,
              requireNumberChar: false,
              requireMixedCase: false,
              maxAttempts: 5,
              lockoutDurationMinutes: 0,
            },
            extJwt: { allowed: true, allowedSigners: [] },
          },
          secondary: { requireTotp: false, requireExtJwtSigner: null },
          tags: {},
        },
      },
      201,
    )
    await expectContract(
      app,
      management,
      '/auth-policies/{id}',
      { method: 'GET', url: `${M}/auth-policies/${policy.data.id}`, headers },
      200,
    )
    await expectContract(
      app,
      management,
      '/auth-policies',
      { method: 'GET', url: `${M}/auth-policies`, headers },
      200,
    )
    const identity = await expectContract(
      app,
      management,
      '/identities',
      {
        method: 'POST',
        url: `${M}/identities`,
        headers,
        payload: {
          name: 'ziti-cli-user',
          type: 'User',
          isAdmin: false,
          roleAttributes: ['a'],
          enrollment: { ott: true },
          authPolicyId: policy.data.id,
          externalId: null,
          defaultHostingCost: 0,
          defaultHostingPrecedence: 'default',
          serviceHostingCosts: {},
          serviceHostingPrecedences: {},
          appData: {},
          tags: {},
        },
      },
      201,
    )
    await expectContract(
      app,
      management,
      '/identities/{id}',
      { method: 'GET', url: `${M}/identities/${identity.data.id}`, headers },
      200,
    )
    await expectContract(
      app,
      management,
      '/identities',
      { method: 'GET', url: `${M}/identities`, headers },
      200,
    )
  })

  it('errors: 400, 401, 404 and 409 in the error envelope', async () => {
    const app = await buildTestApp()
    const headers = { 'zt-session': await login(app) }
    await expectContract(
      app,
      management,
      '/external-jwt-signers',
      { method: 'POST', url: `${M}/external-jwt-signers`, headers, payload: { name: 'x' } },
      400,
    )
    await expectContract(
      app,
      management,
      '/external-jwt-signers',
      { method: 'GET', url: `${M}/external-jwt-signers` },
      401,
    )
    await expectContract(
      app,
      management,
      '/external-jwt-signers/{id}',
      { method: 'GET', url: `${M}/external-jwt-signers/missing`, headers },
      404,
    )
    const signer = await app.inject({
      method: 'POST',
      url: `${M}/external-jwt-signers`,
      headers,
      payload: {
        name: 's',
        enabled: true,
        issuer: 'https://s',
        audience: 'a',
        jwksEndpoint: 'https://s/jwks',
      },
    })
    await app.inject({
      method: 'POST',
      url: `${M}/auth-policies`,
      headers,
      payload: {
        name: 'p',
        primary: {
          cert: { allowed: false },
          updb: { allowed: true },
          extJwt: { allowed: true, allowedSigners: [signer.json().data.id] },
        },
        secondary: {},
      },
    })
    await expectContract(
      app,
      management,
      '/external-jwt-signers/{id}',
      { method: 'DELETE', url: `${M}/external-jwt-signers/${signer.json().data.id}`, headers },
      409,
    )
    await expectContract(
      app,
      management,
      '/authenticate',
      {
        method: 'POST',
        url: `${M}/authenticate?method=password`,
        payload: { username: 'admin', password: 'wrong-password-x' },
      },
      401,
    )
  })

  it('version discovery on every path, for both APIs', async () => {
    const app = await buildTestApp()
    for (const url of ['/version', '/edge/client/v1/version', `${M}/version`]) {
      await expectContract(app, client, '/version', { method: 'GET', url }, 200)
      const body = await expectContract(app, management, '/version', { method: 'GET', url }, 200)
      // The spec's version definition allows any map: check the APIs the CLI and console read.
      expect(Object.keys(body.data.apiVersions).sort()).toEqual([
        'edge',
        'edge-client',
        'edge-management',
      ])
    }
    // Each API's root (listRoot) answers the same envelope.
    await expectContract(app, client, '/', { method: 'GET', url: '/edge/client/v1/' }, 200)
    await expectContract(app, management, '/', { method: 'GET', url: `${M}/` }, 200)
  })

  it('has a validator that rejects a body missing a required field', async () => {
    const app = await buildTestApp()
    const headers = { 'zt-session': await login(app) }
    const created = await app.inject({
      method: 'POST',
      url: `${M}/identities`,
      headers,
      payload: { name: 'x' },
    })
    const detail = (
      await app.inject({ method: 'GET', url: `${M}/identities/${created.json().data.id}`, headers })
    ).json()
    expect(management.check('/identities/{id}', 'get', 200, detail)).toEqual([])
    delete detail.data.authPolicy
    expect(management.check('/identities/{id}', 'get', 200, detail).join()).toContain('authPolicy')
  })

  it('still refuses fields OpenZiti does not define', async () => {
    const app = await buildTestApp()
    const headers = { 'zt-session': await login(app) }
    for (const [url, payload] of [
      [`${M}/identities`, { name: 'x', type: 'User', isAdmin: false, favouriteColour: 'blue' }],
      [
        `${M}/external-jwt-signers`,
        {
          name: 'x',
          enabled: true,
          issuer: 'i',
          audience: 'a',
          jwksEndpoint: 'https://x/j',
          color: 1,
        },
      ],
      [
        `${M}/auth-policies`,
        {
          name: 'x',
          primary: {
            cert: { allowed: true },
            updb: { allowed: true, strength: 9 },
            extJwt: { allowed: true },
          },
          secondary: {},
        },
      ],
    ] as const) {
      const res = await app.inject({ method: 'POST', url, headers, payload })
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('COULD_NOT_VALIDATE')
    }
  })
})
