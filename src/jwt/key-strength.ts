/**
 * The smallest RSA public exponent accepted (FIPS 186-5, appendix A.1.1: odd, at least 2^16 + 1).
 * With e = 1 a "signature" is the padded hash itself and anyone can make one without a key; small
 * exponents also open the door to forgeries against lax padding checks.
 */
export const MIN_RSA_EXPONENT = 65537n

/**
 * The bound every RSA public exponent stays under (FIPS 186-5, appendix A.1.1: e < 2^256). A key
 * with a huge exponent verifies correctly, but each check costs as much as the exponent is long
 * (a 3,064-bit one about 60 times a check with 65537), on threads every login shares.
 */
export const RSA_EXPONENT_BOUND = 2n ** 256n

/** Why an RSA public exponent is refused, or undefined when it is acceptable. */
export function rsaExponentRefusal(e: bigint | undefined): string | undefined {
  if (e === undefined) return 'the RSA key has no public exponent'
  if (e % 2n === 0n) return `the RSA public exponent ${e} is even`
  if (e < MIN_RSA_EXPONENT) return `the RSA public exponent ${e} is below ${MIN_RSA_EXPONENT}`
  if (e >= RSA_EXPONENT_BOUND) return 'the RSA public exponent is 2^256 or more'
  return undefined
}

/** The exponent of a JWK's base64url `e` member, or undefined when it has none or it is not one. */
export function jwkExponent(e: unknown): bigint | undefined {
  if (typeof e !== 'string' || !/^[A-Za-z0-9_-]{1,700}$/.test(e)) return undefined
  const hex = Buffer.from(e, 'base64url').toString('hex')
  return hex === '' ? undefined : BigInt(`0x${hex}`)
}

/** The smallest RSA modulus accepted, in bits (as for certificate signers). */
export const MIN_RSA_BITS = 2048

/** The size in bits of a JWK's base64url `n` member, or undefined when it is not one. */
function jwkModulusBits(n: unknown): number | undefined {
  if (typeof n !== 'string' || !/^[A-Za-z0-9_-]{1,2800}$/.test(n)) return undefined
  const hex = Buffer.from(n, 'base64url').toString('hex').replace(/^0+/, '')
  if (hex === '') return undefined
  return (hex.length - 1) * 4 + Number.parseInt(hex.charAt(0), 16).toString(2).length
}

/**
 * Why a JWK may not verify signatures here, or undefined: a symmetric (`oct`) key, a key of no type
 * an accepted algorithm uses (none, or another), an RSA key under MIN_RSA_BITS, without a
 * modulus, or with a weak exponent. EC and OKP keys are checked on import by their curve.
 */
export function jwkRefusal(jwk: { kty?: unknown; e?: unknown; n?: unknown }): string | undefined {
  if (jwk.kty === 'oct') return 'a symmetric (oct) key cannot verify an external JWT'
  if (jwk.kty === 'EC' || jwk.kty === 'OKP') return undefined
  if (jwk.kty !== 'RSA') return 'not a key type of an accepted algorithm (RSA, EC or OKP)'
  const bits = jwkModulusBits(jwk.n)
  if (bits === undefined) return 'the RSA key has no valid modulus'
  if (bits < MIN_RSA_BITS)
    return `the RSA key has ${bits} bits; at least ${MIN_RSA_BITS} are needed`
  return rsaExponentRefusal(jwkExponent(jwk.e))
}
