import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'

export interface RunningProvider {
  issuer: string
  /** A JWT access token for the client-credentials grant of `clientId`, audience `ziti-controller`. */
  accessToken: (clientId: string) => Promise<string>
  close: () => Promise<void>
}

/**
 * A real OpenID provider on 127.0.0.1 (oidc-provider), with the given confidential clients;
 * `extraClaims` adds claims to each client's access tokens (a user's name, groups).
 */
export async function startOidcProvider(
  clientIds: string[],
  extraClaims: (clientId: string) => Record<string, unknown> = () => ({}),
): Promise<RunningProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const key = { ...(await exportJWK(privateKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' }
  let serve: ReturnType<Provider['callback']> | undefined
  const server = createServer((req, res) => serve?.(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}` // listening on TCP
  const provider = new Provider(issuer, {
    clients: clientIds.map((id) => ({
      client_id: id,
      client_secret: `${id}-secret-value`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post' as const,
    })),
    jwks: { keys: [key] },
    extraTokenClaims: (_ctx, token) => extraClaims(String(token.clientId)),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:ziti',
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'api',
          audience: 'ziti-controller',
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  })
  serve = provider.callback()

  const accessToken = async (clientId: string) => {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: `${clientId}-secret-value`,
        resource: 'urn:ziti',
        scope: 'api',
      }),
    })
    if (res.status !== 200) throw new Error(`token endpoint answered ${res.status}`)
    return ((await res.json()) as { access_token: string }).access_token
  }
  const close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  return { issuer, accessToken, close }
}
