import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, forEachStore, login } from '../helpers/app.js'

let server: Server
let issuer: string

/** A real OpenID provider on 127.0.0.1 issuing JWT access tokens with the client-credentials grant. */
beforeAll(async () => {
  server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}` // listening on TCP
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(privateKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' }
  const client = (id: string) => ({
    client_id: id,
    client_secret: `${id}-secret-value`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_post' as const,
  })
  const provider = new Provider(issuer, {
    clients: [client('ziti-tunneler'), client('stranger')],
    jwks: { keys: [jwk] },
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
  server.on('request', provider.callback())
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

forEachStore(() => {
  describe('JWT login against a real OpenID provider', () => {
    it('lets the matching identity log in with a JWKS signer at the provider jwks_uri', async () => {
      const discovery = (await (
        await fetch(`${issuer}/.well-known/openid-configuration`)
      ).json()) as {
        jwks_uri: string
        issuer: string
      }
      const app = await buildTestApp()
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

      const good = await tryLogin(await accessToken('ziti-tunneler'))
      expect(good.statusCode).toBe(200)
      expect(good.json().data.identityId).toBe(identity.json().data.id)

      // A token for another audience, and a token of a client that is no identity here, are refused.
      expect((await tryLogin(await accessToken('ziti-tunneler', 'urn:other'))).statusCode).toBe(401)
      expect((await tryLogin(await accessToken('stranger'))).statusCode).toBe(401)
    })
  })
})
