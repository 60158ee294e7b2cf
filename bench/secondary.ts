import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { DURATION_S, measure, type Paired, paired, SLICES } from './common.js'
import { type Call, passwordSession } from './controller.js'

async function idOf(res: Promise<Response>): Promise<string> {
  return ((await (await res).json()) as { data: { id: string } }).data.id
}

/** Both users' password. */
const SECONDARY_PASSWORD = 'bench-password-1'

export interface SecondaryFixture {
  /** current-identity: the route both users call. */
  url: string
  /** A new session of the user (a password login) and the headers of its calls: mfa-user's JWT too. */
  headers(user: SecondaryUser): Promise<Record<string, string>>
  close(): void
}

export type SecondaryUser = 'mfa-user' | 'plain-user'

/**
 * Two users of the same controller: mfa-user, whose policy asks for a JWT of a signer (its JWKS
 * served here) on every call, and plain-user, on the default policy. Both log in with a password.
 */
export async function secondaryFixture(base: string, call: Call): Promise<SecondaryFixture> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'mfa', alg: 'ES256' }] }
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(jwks))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const signerId = await idOf(
    call('POST', '/edge/management/v1/external-jwt-signers', {
      name: 'bench-mfa',
      enabled: true,
      issuer: 'https://mfa.bench',
      audience: 'ziti',
      jwksEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, // TCP listener
    }),
  )
  const policyId = await idOf(
    call('POST', '/edge/management/v1/auth-policies', {
      name: 'bench-mfa',
      primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
      secondary: { requireExtJwtSigner: signerId },
    }),
  )
  const ids: Record<string, string> = {}
  for (const [name, authPolicyId] of [
    ['mfa-user', policyId],
    ['plain-user', 'default'],
  ] as const) {
    ids[name] = await idOf(call('POST', '/edge/management/v1/identities', { name, authPolicyId }))
    await call('PUT', `/edge/management/v1/identities/${ids[name]}/password`, {
      password: SECONDARY_PASSWORD,
    })
  }
  await new Promise((r) => setTimeout(r, 200))
  const mfaUser = ids['mfa-user']
  if (mfaUser === undefined) throw new Error('bench: the mfa-user identity was not created')
  const jwt = await new SignJWT({ sub: mfaUser })
    .setProtectedHeader({ alg: 'ES256', kid: 'mfa' })
    .setIssuer('https://mfa.bench')
    .setAudience('ziti')
    .setExpirationTime('1h')
    .sign(privateKey)

  return {
    url: `${base}/edge/client/v1/current-identity`,
    headers: async (user) => ({
      'zt-session': await passwordSession(base, user, SECONDARY_PASSWORD, 'client'),
      ...(user === 'mfa-user' ? { authorization: `Bearer ${jwt}` } : {}),
    }),
    close: () => server.close(),
  }
}

/** The secondary-factor goal's figures: the goal, and the instrument's own spread beside it. */
export interface SecondaryFigures {
  /** current-identity with the factor against the same route without. */
  factor: Paired
  /**
   * The same route without the factor against itself, in the same turns: what the machine alone
   * does to a round's ratio. A lowest round below 1 here is noise, not anyone's cost.
   */
  noise: Paired
}

/**
 * current-identity with a secondary-factor policy and a repeated JWT, against the same route
 * without; then that route against itself. Each round logs the users in right before it measures
 * (see Controller.adminSession).
 */
export async function benchSecondary(
  base: string,
  call: Call,
  pid?: number,
): Promise<SecondaryFigures> {
  const fixture = await secondaryFixture(base, call)
  // Each round logs the user in right before it measures; its slices share that session.
  const run = (user: SecondaryUser) => {
    let headers: Record<string, string> = {}
    return async (round: number, slice: number) => {
      if (slice === 0) headers = await fixture.headers(user)
      return measure(fixture.url, {
        ...(pid === undefined ? {} : { pid }),
        warmup: round === 0 && slice === 0,
        seconds: DURATION_S / SLICES,
        headers,
      })
    }
  }
  const factor = await paired(
    'current-identity, secondary JWT (repeated)',
    'no factor',
    run('plain-user'),
    run('mfa-user'),
    SLICES,
  )
  const noise = await paired(
    'current-identity, no factor (second turn)',
    'no factor (first turn)',
    run('plain-user'),
    run('plain-user'),
    SLICES,
  )
  fixture.close()
  return { factor, noise }
}
