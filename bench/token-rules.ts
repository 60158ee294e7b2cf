import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { measure, type Paired, paired } from './common.js'
import { type Controller, PASSWORD, passwordSession } from './controller.js'
import { distinctLogins, LOGIN_TOKENS } from './login.js'

/** Two extra audiences and three claim conditions: what the goal names. */
const RULES = {
  audiences: ['account', 'ziti-tunnel'],
  claims: [
    { claim: '/azp', oneOf: ['ziti-tunnel', 'ziti-edge'] },
    { claim: '/email_verified', equals: true },
    { claim: '/groups', contains: 'ziti-users' },
  ],
}

async function idOf(res: Promise<Response>): Promise<string> {
  return ((await (await res).json()) as { data: { id: string } }).data.id
}

/**
 * Login with distinct tokens and the secondary factor (repeated token), each through a signer
 * with token rules against the same through a signer without, on one controller in the same run.
 * Resolves with both ratios (goal: 0.95 each). The secondary-factor runs log their users in right
 * before they measure: the login runs' thousands of sessions of the same users end older ones.
 */
export async function benchTokenRules(
  ctrl: Controller,
): Promise<{ login: Paired; secondary: Paired }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'rules', alg: 'RS256' }] }
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(jwks))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const jwksEndpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks` // TCP
  const M = '/edge/management/v1'
  const kinds = ['plain', 'rules'] as const
  const fixture: Record<string, { issuer: string; user: string; name: string }> = {}
  for (const kind of kinds) {
    const issuer = `https://${kind}.rules-bench`
    const signerId = await idOf(
      ctrl.call('POST', `${M}/external-jwt-signers`, {
        name: `bench-${kind}`,
        enabled: true,
        issuer,
        audience: 'ziti',
        jwksEndpoint,
        ...(kind === 'rules' ? { tokenRules: RULES } : {}),
      }),
    )
    const policy = await idOf(
      ctrl.call('POST', `${M}/auth-policies`, {
        name: `bench-${kind}`,
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
        secondary: { requireExtJwtSigner: signerId },
      }),
    )
    const name = `rules-bench-${kind}`
    const user = await idOf(ctrl.call('POST', `${M}/identities`, { name, authPolicyId: policy }))
    await ctrl.call('PUT', `${M}/identities/${user}/password`, { password: PASSWORD })
    fixture[kind] = { issuer, user, name }
  }
  await new Promise((r) => setTimeout(r, 300))
  let serial = 0
  // The same claims for both signers: only the rules differ.
  const sign = (kind: (typeof kinds)[number]) => {
    const f = fixture[kind] as { issuer: string; user: string } // both kinds were set up
    return new SignJWT({
      sub: f.user,
      jti: `r${serial++}`,
      azp: 'ziti-edge',
      email_verified: true,
      groups: ['staff', 'ziti-users'],
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'rules' })
      .setIssuer(f.issuer)
      .setAudience(kind === 'rules' ? ['other', 'ziti-tunnel'] : ['other', 'ziti'])
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey)
  }
  const tokens = (kind: (typeof kinds)[number], n: number) =>
    Promise.all(Array.from({ length: n }, () => sign(kind)))
  // Both login paths warm up on tokens of their own first.
  for (const kind of kinds) await distinctLogins(ctrl, await tokens(kind, 3000))
  const login = await paired(
    'ext-jwt login RS256, signer with token rules',
    'no rules',
    async () => distinctLogins(ctrl, await tokens('plain', LOGIN_TOKENS)),
    async () => distinctLogins(ctrl, await tokens('rules', LOGIN_TOKENS)),
  )
  const url = `${ctrl.base}/edge/client/v1/current-identity`
  const repeated = { plain: await sign('plain'), rules: await sign('rules') }
  const secondaryRun = (kind: (typeof kinds)[number]) => async (round: number) => {
    const name = fixture[kind]?.name as string // both kinds were set up
    const session = await passwordSession(ctrl.base, name, PASSWORD, 'client')
    return measure(url, {
      pid: ctrl.pid,
      warmup: round === 0,
      headers: { 'zt-session': session, authorization: `Bearer ${repeated[kind]}` },
    })
  }
  const secondary = await paired(
    'secondary factor, signer with token rules',
    'no rules',
    secondaryRun('plain'),
    secondaryRun('rules'),
  )
  server.close()
  return { login, secondary }
}
