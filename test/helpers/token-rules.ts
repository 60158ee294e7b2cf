import { exportJWK, generateKeyPair, type JWTPayload } from 'jose'
import { buildTestApp, caller, login, testClock } from './app.js'
import { startJwksServer } from './jwks-server.js'
import { signJwt, signRs256Raw } from './jwt.js'

export const RULES_ISSUER = 'https://idp.rules.example'
export const RULES_NOW = '2026-11-22T08:00:00.000Z'
export const SIGNERS = '/edge/management/v1/external-jwt-signers'
const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'

async function newSigningKey() {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' },
  }
}

// One key per test file: an RSA key takes 100-400 ms of CPU to generate, and each setup has an app
// and a JWKS server of its own, so no setup can see another's key.
let signingKey: ReturnType<typeof newSigningKey> | undefined

/**
 * An app with one JWKS signer (a real key served from 127.0.0.1) carrying `tokenRules`, and the
 * identity alice whose id tokens name in `sub`. `token` signs at the test clock's time.
 */
export async function rulesSetup(
  tokenRules: object | null,
  options: {
    config?: Record<string, unknown>
    signer?: Record<string, unknown>
    app?: Omit<Parameters<typeof buildTestApp>[0], 'config' | 'clock'>
  } = {},
) {
  signingKey ??= newSigningKey()
  const { privateKey, jwk } = await signingKey
  const server = await startJwksServer([jwk])
  const clock = testClock(RULES_NOW)
  const app = await buildTestApp({
    clock,
    ...options.app,
    ...(options.config ? { config: options.config } : {}),
  })
  const call = caller(app, await login(app))
  const signer = await call('POST', SIGNERS, {
    name: 'idp',
    enabled: true,
    issuer: RULES_ISSUER,
    audience: 'ziti',
    jwksEndpoint: server.url,
    ...(tokenRules ? { tokenRules } : {}),
    ...options.signer,
  })
  if (signer.statusCode !== 201) throw new Error(`signer: ${signer.body}`)
  // The create starts the key fetch in the background; logins wait for nothing else.
  for (let i = 0; i < 200 && server.hits() < 1; i++) await new Promise((r) => setTimeout(r, 10))
  await new Promise((r) => setTimeout(r, 20))
  const signerId = signer.json().data.id as string
  const identityId = (
    await call('POST', '/edge/management/v1/identities', { name: 'alice' })
  ).json().data.id as string
  /** Claims set to undefined are left out (signJwt drops them). */
  const token = (claims: Record<string, unknown> = {}, now = clock()) =>
    signJwt(
      privateKey,
      { iss: RULES_ISSUER, aud: 'ziti', sub: identityId, ...claims } as JWTPayload, // any claims
      { kid: 'k1', now },
    )
  /** Signs payload text as it is, after the issuer, audience and subject (`"exp":1e400`, say). */
  const rawToken = (members: string) =>
    signRs256Raw(
      privateKey as Parameters<typeof signRs256Raw>[0],
      { kid: 'k1', typ: 'JWT' },
      `{"iss":${JSON.stringify(RULES_ISSUER)},"aud":"ziti","sub":${JSON.stringify(identityId)},${members}}`,
    )
  const loginWith = (jwt: string) =>
    app.inject({ method: 'POST', url: LOGIN, headers: { authorization: `Bearer ${jwt}` } })
  const tryLogin = async (claims: Record<string, unknown> = {}) =>
    (await loginWith(await token(claims))).statusCode
  const explain = async (jwt: string) =>
    (await call('POST', `${SIGNERS}/verify-token`, { token: jwt })).json().data as Record<
      string,
      unknown
    >
  return {
    app,
    call,
    clock,
    server,
    signerId,
    identityId,
    token,
    rawToken,
    loginWith,
    tryLogin,
    explain,
  }
}
