import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Config } from '../../src/config.js'
import { buildTestApp, forEachStore, login } from '../helpers/app.js'

let server: Server
let issuer: string
/** The provider serving requests now; a test may swap it for one with other keys (rotation). */
let serve: ReturnType<Provider['callback']>
let jwksHits = 0

async function signingKey(kid: string) {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' }
}

function makeProvider(keys: Awaited<ReturnType<typeof signingKey>>[]): Provider {
  const client = (id: string) => ({
    client_id: id,
    client_secret: `${id}-secret-value`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_post' as const,
  })
  return new Provider(issuer, {
    clients: [client('ziti-tunneler'), client('stranger')],
    jwks: { keys },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:ziti',
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: 'api',
          audience: resource === 'urn:ziti' ? 'ziti-controller' : 'some-other-api',
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  })
}

/** A real OpenID provider on 127.0.0.1 issuing JWT access tokens with the client-credentials grant. */
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url?.startsWith('/jwks')) jwksHits++
    serve(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}` // listening on TCP
  serve = makeProvider([await signingKey('idp-key-1')]).callback()
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

async function accessToken(clientId: string, resource = 'urn:ziti'): Promise<string> {
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: `${clientId}-secret-value`,
      resource,
      scope: 'api',
    }),
  })
  expect(res.status).toBe(200)
  return ((await res.json()) as { access_token: string }).access_token
}

/** The app with a JWKS signer set up from the provider's discovery document, and one identity. */
async function setup(config: Partial<Config> = {}) {
  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
    jwks_uri: string
    issuer: string
  }
  const app = await buildTestApp({ config })
  const session = await login(app)
  const call = (url: string, payload: object) =>
    app.inject({ method: 'POST', url, headers: { 'zt-session': session }, payload })
  const signer = await call('/edge/management/v1/external-jwt-signers', {
    name: 'oidc',
    enabled: true,
    issuer: discovery.issuer,
    audience: 'ziti-controller',
    jwksEndpoint: discovery.jwks_uri,
    useExternalId: true,
    claimsProperty: 'client_id',
  })
  expect(signer.statusCode).toBe(201)
  const identity = await call('/edge/management/v1/identities', {
    name: 'tunneler',
    externalId: 'ziti-tunneler',
  })
  const tryLogin = (jwt: string) =>
    app.inject({
      method: 'POST',
      url: '/edge/client/v1/authenticate?method=ext-jwt',
      headers: { authorization: `Bearer ${jwt}` },
    })
  return { identityId: identity.json().data.id as string, tryLogin }
}

forEachStore(() => {
  describe('JWT login against a real OpenID provider', () => {
    it('lets the matching identity log in with a JWKS signer at the provider jwks_uri', async () => {
      const { identityId, tryLogin } = await setup()
      const good = await tryLogin(await accessToken('ziti-tunneler'))
      expect(good.statusCode).toBe(200)
      expect(good.json().data.identityId).toBe(identityId)

      // A token for another audience, and a token of a client that is no identity here, are refused.
      expect((await tryLogin(await accessToken('ziti-tunneler', 'urn:other'))).statusCode).toBe(401)
      expect((await tryLogin(await accessToken('stranger'))).statusCode).toBe(401)
    })

    it('refuses tokens of a key the provider retired after the next refresh, cached or not', async () => {
      const { tryLogin } = await setup({ jwksMaxAgeMs: 300, jwksCooldownMs: 100 })
      const seen = await accessToken('ziti-tunneler')
      const unseen = await accessToken('ziti-tunneler')
      expect((await tryLogin(seen)).statusCode).toBe(200)

      // The provider rotates: a new signing key, the old one gone from its JWKS.
      serve = makeProvider([await signingKey('idp-key-2')]).callback()
      const fresh = await accessToken('ziti-tunneler')
      const before = jwksHits
      await vi.waitFor(() => expect(jwksHits).toBeGreaterThanOrEqual(before + 2), {
        timeout: 5000,
        interval: 20,
      })
      expect((await tryLogin(seen)).statusCode).toBe(401)
      expect((await tryLogin(unseen)).statusCode).toBe(401)
      expect((await tryLogin(fresh)).statusCode).toBe(200)
    })
  })
})
