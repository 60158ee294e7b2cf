import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose'
import { loop, measure, report } from './common.js'

type Call = (method: string, url: string, body?: unknown) => Promise<Response>

/** Login throughput for RS256 and ES256 tokens against the raw jwtVerify rate of the same tokens. */
export async function benchLogin(base: string, call: Call): Promise<void> {
  const pairs = await Promise.all(
    (['RS256', 'ES256'] as const).map(async (alg) => {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
      return { alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid: `bench-${alg}`, alg } }
    }),
  )
  const jwks = { keys: pairs.map((p) => p.jwk) }
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(jwks))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks` // TCP listener
  await call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'bench-jwks',
    enabled: true,
    issuer: 'https://bench.idp',
    audience: 'ziti',
    jwksEndpoint: jwksUrl,
  })
  const identity = await call('POST', '/edge/management/v1/identities', { name: 'bench-user' })
  const sub = ((await identity.json()) as { data: { id: string } }).data.id
  await new Promise((r) => setTimeout(r, 200))

  const localSet = createLocalJWKSet(jwks)
  for (const pair of pairs) {
    const tokens = await Promise.all(
      Array.from({ length: 2000 }, (_, i) =>
        new SignJWT({ sub, jti: `t${i}` })
          .setProtectedHeader({ alg: pair.alg, kid: pair.jwk.kid })
          .setIssuer('https://bench.idp')
          .setAudience('ziti')
          .setIssuedAt()
          .setExpirationTime('1h')
          .sign(pair.privateKey),
      ),
    )
    let i = 0
    const rawRate = await loop(() =>
      jwtVerify(tokens[i++ % tokens.length] as string, localSet, {
        issuer: 'https://bench.idp',
        audience: 'ziti',
        requiredClaims: ['exp'],
      }),
    )
    console.log(
      `${`raw jose.jwtVerify ${pair.alg} (sequential)`.padEnd(46)} ${rawRate.toFixed(0).padStart(7)} ops/s`,
    )
    let j = 0
    const login = await measure(`${base}/edge/client/v1/authenticate?method=ext-jwt`, {
      method: 'POST',
      headers: () => ({ authorization: `Bearer ${tokens[j++ % tokens.length]}` }),
    })
    report(`ext-jwt login ${pair.alg}`, login, rawRate, `raw verify`)
  }
  server.close()
}
