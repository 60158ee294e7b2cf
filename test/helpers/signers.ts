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
