/**
 * The smallest RSA public exponent accepted (FIPS 186-5, appendix A.1.1: odd, at least 2^16 + 1).
 * With e = 1 a "signature" is the padded hash itself and anyone can make one without a key; small
 * exponents also open the door to forgeries against lax padding checks.
 */
export const MIN_RSA_EXPONENT = 65537n

/** Why an RSA public exponent is refused, or undefined when it is acceptable. */
export function rsaExponentRefusal(e: bigint | undefined): string | undefined {
  if (e === undefined) return 'the RSA key has no public exponent'
  if (e % 2n === 0n) return `the RSA public exponent ${e} is even`
  if (e < MIN_RSA_EXPONENT) return `the RSA public exponent ${e} is below ${MIN_RSA_EXPONENT}`
  return undefined
}

/** The exponent of a JWK's base64url `e` member, or undefined when it has none or it is not one. */
export function jwkExponent(e: unknown): bigint | undefined {
  if (typeof e !== 'string' || !/^[A-Za-z0-9_-]{1,700}$/.test(e)) return undefined
  const hex = Buffer.from(e, 'base64url').toString('hex')
  return hex === '' ? undefined : BigInt(`0x${hex}`)
}

/**
 * Why a JWK may not verify signatures here, or undefined. Only RSA keys are judged: EC and OKP
 * keys are checked on import by their curve.
 */
export function jwkRefusal(jwk: { kty?: unknown; e?: unknown }): string | undefined {
  if (jwk.kty !== 'RSA') return undefined
  return rsaExponentRefusal(jwkExponent(jwk.e))
}
