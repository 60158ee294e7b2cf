import type { webcrypto } from 'node:crypto'
import { type JWTPayload, SignJWT } from 'jose'

export interface SignOptions {
  alg?: string
  kid?: string | undefined
  header?: Record<string, unknown>
  now?: Date
}

/** Signs a JWT with the given claims; `exp` defaults to an hour after `now` unless set to undefined. */
export async function signJwt(
  key: webcrypto.CryptoKey | Uint8Array,
  claims: JWTPayload,
  options: SignOptions = {},
): Promise<string> {
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000)
  const body: JWTPayload = { iat: now, exp: now + 3600, ...claims }
  for (const [k, v] of Object.entries(body)) if (v === undefined) delete body[k]
  const header = {
    alg: options.alg ?? 'RS256',
    ...(options.kid === undefined ? {} : { kid: options.kid }),
    ...options.header,
  }
  return new SignJWT(body)
    .setProtectedHeader(header as { alg: string })
    .sign(key as Parameters<SignJWT['sign']>[0]) // jose accepts Node's webcrypto keys
}

/** An unsigned token (`alg: none`), which must never be accepted. */
export function unsignedJwt(claims: JWTPayload, header: Record<string, unknown> = {}): string {
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  return `${enc({ alg: 'none', ...header })}.${enc(claims)}.`
}

/**
 * RS256-signs any header and payload by hand, for headers jose itself refuses to produce; a payload
 * given as text is signed as it is (JSON that `JSON.stringify` cannot write, such as `1e400`).
 */
export async function signRs256Raw(
  key: webcrypto.CryptoKey,
  header: Record<string, unknown>,
  payload: Record<string, unknown> | string,
): Promise<string> {
  const { subtle } = await import('node:crypto').then((m) => m.webcrypto)
  const enc = (o: object | string) =>
    Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url')
  const input = `${enc({ alg: 'RS256', ...header })}.${enc(payload)}`
  const sig = await subtle.sign('RSASSA-PKCS1-v1_5', key, Buffer.from(input))
  return `${input}.${Buffer.from(sig).toString('base64url')}`
}
