import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { startJwksServer } from '../helpers/jwks-server.js'

const SIGNERS = '/edge/management/v1/external-jwt-signers'

let server: Server
let issuer: string

/** A real OpenID provider on 127.0.0.1. */
beforeAll(async () => {
  server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}` // listening on TCP
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(privateKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' }
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    features: { devInteractions: { enabled: false } },
  })
  server.on('request', provider.callback())
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

async function setup(options: Parameters<typeof buildTestApp>[0] = {}) {
  const app = await buildTestApp(options)
  const call = caller(app, await login(app))
  const discover = (body: unknown, path = 'external-jwt-signers') =>
    call('POST', `/edge/management/v1/${path}/discover`, body)
  return { app, call, discover }
}

/** A server on 127.0.0.1 answering every path with what the test sets; its base URL. */
async function documentServer() {
  const s = await startJwksServer()
  return { ...s, base: s.url.replace(/\/jwks$/, '') }
}

function expectIssuerRefused(res: { statusCode: number; json(): unknown }, fragment: string) {
  expect(res.statusCode).toBe(400)
  const { error } = res.json() as {
    error: { code: string; cause: { field: string; reason: string } }
  }
  expect(error.code).toBe('INVALID_FIELD')
  expect(error.cause.field).toBe('issuer')
  expect(error.cause.reason).toContain(fragment)
}

describe('signer set-up from OpenID discovery', () => {
  it('proposes a signer from a real provider document, on both paths, creating nothing', async () => {
    const { call, discover } = await setup()
    const doc = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
      jwks_uri: string
      authorization_endpoint: string
    }
    for (const path of ['external-jwt-signers', 'ext-jwt-signers']) {
      const res = await discover({ issuer }, path)
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({
        data: { issuer, jwksEndpoint: doc.jwks_uri, externalAuthUrl: doc.authorization_endpoint },
        meta: {},
      })
    }
    expect((await call('GET', SIGNERS)).json().meta.pagination.totalCount).toBe(0)

    const proposal = (await discover({ issuer })).json().data
    const created = await call('POST', SIGNERS, {
      ...proposal,
      name: 'from discovery',
      enabled: true,
      audience: 'ziti',
    })
    expect(created.statusCode).toBe(201)
  })

  it('refuses a document that names another issuer, even by a trailing slash', async () => {
    const { discover } = await setup()
    expectIssuerRefused(await discover({ issuer: `${issuer}/` }), 'not exactly this one')

    const other = await documentServer()
    other.respond({
      body: JSON.stringify({ issuer: 'https://idp.example/realms/x', jwks_uri: `${other.base}/j` }),
    })
    expectIssuerRefused(await discover({ issuer: `${other.base}/realms/x` }), 'names issuer')

    // A deeply nested or huge issuer in the document: refused with 400 saying what it is, not a
    // 500 (quoting it overflowed the stack) nor a megabyte quoted back.
    const nested = `${'['.repeat(200_000)}${']'.repeat(200_000)}`
    other.respond({ body: `{"issuer":${nested},"jwks_uri":"${other.base}/j"}` })
    const deep = await discover({ issuer: `${other.base}/realms/x` })
    expectIssuerRefused(deep, 'names an issuer that is not a string (an array)')
    other.respond({
      body: JSON.stringify({ issuer: 'x'.repeat(500_000), jwks_uri: `${other.base}/j` }),
    })
    const huge = await discover({ issuer: `${other.base}/realms/x` })
    expectIssuerRefused(huge, 'names an issuer of 500000 characters')
    expect(huge.body.length).toBeLessThan(2000)
  })

  it('refuses an issuer with a query, a fragment or user info without fetching (SSRF ranges finding)', async () => {
    const { discover } = await setup()
    const doc = await documentServer()
    doc.respond({ body: JSON.stringify({ issuer: doc.base, jwks_uri: `${doc.base}/j` }) })
    expectIssuerRefused(await discover({ issuer: `${doc.base}/x#` }), 'fragment')
    expectIssuerRefused(await discover({ issuer: `${doc.base}/x#frag` }), 'fragment')
    expectIssuerRefused(await discover({ issuer: `${doc.base}/x?x=` }), 'query')
    expectIssuerRefused(await discover({ issuer: `${doc.base}/x?` }), 'query')
    const withUser = doc.base.replace('http://', 'http://user:pw@')
    expectIssuerRefused(await discover({ issuer: withUser }), 'user info')
    expectIssuerRefused(await discover({ issuer: 'not a url' }), 'absolute URL')
    expect(doc.hits()).toBe(0)
  })

  it('refuses blocked addresses, literal or resolved, without connecting', async () => {
    const asked: string[] = []
    const { discover } = await setup({
      resolver: async (hostname: string) => {
        asked.push(hostname)
        return [{ address: '169.254.169.254', family: 4 }]
      },
    })
    expectIssuerRefused(await discover({ issuer: 'http://169.254.169.254/realms/x' }), '169.254')
    expect(asked).toEqual([])
    expectIssuerRefused(await discover({ issuer: 'https://idp.example/realms/x' }), '169.254')
    expect(asked).toEqual(['idp.example'])
    expectIssuerRefused(await discover({ issuer: 'file:///etc/passwd' }), 'scheme')
  })

  it('refuses loopback when private addresses are blocked, and plain http when https is required', async () => {
    const blocked = await setup({ config: { jwksBlockPrivate: true } })
    expectIssuerRefused(await blocked.discover({ issuer }), 'private or loopback')
    const httpsOnly = await setup({ config: { jwksAllowHttp: false } })
    expectIssuerRefused(await httpsOnly.discover({ issuer }), 'https')
  })

  it('refuses a jwks_uri the controller may not fetch from', async () => {
    const { discover } = await setup()
    const doc = await documentServer()
    const own = `${doc.base}/realms/x`
    doc.respond({
      body: JSON.stringify({ issuer: own, jwks_uri: 'http://169.254.169.254/keys' }),
    })
    expectIssuerRefused(await discover({ issuer: own }), 'jwks_uri')
    doc.respond({ body: JSON.stringify({ issuer: own }) })
    expectIssuerRefused(await discover({ issuer: own }), 'jwks_uri')
  })

  it('refuses non-JSON, a 404 and an unreachable provider, saying what went wrong', async () => {
    const { discover } = await setup()
    const doc = await documentServer()
    doc.respond({ type: 'text/html', body: '<html>login</html>' })
    expectIssuerRefused(await discover({ issuer: doc.base }), 'not JSON')
    doc.respond({ type: 'application/json', body: '{"issuer":' })
    expectIssuerRefused(await discover({ issuer: doc.base }), 'not JSON')
    doc.respond({ type: 'application/json', body: '["a"]' })
    expectIssuerRefused(await discover({ issuer: doc.base }), 'not a JSON object')

    expectIssuerRefused(await discover({ issuer: `${issuer}/realms/x` }), 'status 404')

    await doc.close()
    expectIssuerRefused(await discover({ issuer: doc.base }), 'could not be fetched')
  })

  it('is admin only, validates its body, and leaves GET /:id alone', async () => {
    const { app, call, discover } = await setup()
    const anonymous = await app.inject({
      method: 'POST',
      url: `${SIGNERS}/discover`,
      payload: { issuer },
    })
    expect(anonymous.statusCode).toBe(401)
    const user = await call('POST', '/edge/management/v1/identities', { name: 'user' })
    await call('PUT', `/edge/management/v1/identities/${user.json().data.id}/password`, {
      password: 'user-password-123',
    })
    const userCall = caller(app, await login(app, 'user', 'user-password-123'))
    const refused = await userCall('POST', `${SIGNERS}/discover`, { issuer })
    expect(refused.statusCode).toBe(401)

    for (const body of [{}, { issuer: '' }, { issuer, extra: 1 }]) {
      const res = await discover(body)
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('COULD_NOT_VALIDATE')
    }
    const detail = await call('GET', `${SIGNERS}/discover`)
    expect(detail.statusCode).toBe(404)
    expect(detail.json().error.code).toBe('NOT_FOUND')
  })
})
