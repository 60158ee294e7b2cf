import type { FastifyInstance } from 'fastify'
import type { caller } from './app.js'
import { makeCert } from './certs.js'
import { signJwt } from './jwt.js'

/** A JWKS signer that the client list shows (it has an externalAuthUrl); `extra` overrides fields. */
export function listedSigner(name: string, extra: object = {}) {
  return {
    name,
    enabled: true,
    issuer: `https://${name}.example`,
    audience: 'ziti',
    jwksEndpoint: `https://${name}.example/jwks`,
    externalAuthUrl: `https://${name}.example/auth`,
    ...extra,
  }
}

const SIGNERS = '/edge/management/v1/external-jwt-signers'

/**
 * Through `call` (an admin's): a certificate signer of `issuer` (a new certificate, kid `k1`,
 * audience `ziti`), an identity, and a JWT of that identity signed for the signer; with their ids.
 */
export async function certSignerAndToken(
  call: ReturnType<typeof caller>,
  issuer: string,
  identityName = 'alice',
) {
  const cert = await makeCert()
  const created = await call('POST', SIGNERS, {
    name: 'idp',
    enabled: true,
    issuer,
    audience: 'ziti',
    certPem: cert.certPem,
    kid: 'k1',
  })
  if (created.statusCode !== 201) throw new Error(`signer not created: ${created.body}`)
  const identity = await call('POST', '/edge/management/v1/identities', { name: identityName })
  if (identity.statusCode !== 201) throw new Error(`identity not created: ${identity.body}`)
  const identityId = identity.json().data.id as string
  const jwt = await signJwt(
    cert.privateKey,
    { iss: issuer, aud: 'ziti', sub: identityId },
    { kid: 'k1' },
  )
  return { signerId: created.json().data.id as string, identityId, jwt, cert }
}

/** The status an ext-jwt login with `jwt` gets from `app`. */
export async function jwtLoginStatus(app: FastifyInstance, jwt: string): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: '/edge/client/v1/authenticate?method=ext-jwt',
    headers: { authorization: `Bearer ${jwt}` },
  })
  return res.statusCode
}
