import type { SignerRecord } from '../store/signer-repository.js'
import type { ChallengeError } from './verify.js'

const DESCRIPTIONS: Record<ChallengeError, string> = {
  missing: 'no matching token was provided',
  invalid: 'token is invalid',
  expired: 'token expired',
}

/** Quoted-string content: no quotes, backslashes or control characters. */
function quote(value: string): string {
  return value.replace(/["\\]/g, '').replace(/\p{Cc}/gu, '')
}

export type Realm = 'openziti-primary-ext-jwt' | 'openziti-secondary-ext-jwt'

/**
 * A `WWW-Authenticate` Bearer challenge in the edge API's form: space-separated parameters, the
 * signers' ids and issuers joined with `|`.
 */
export function bearerChallenge(
  realm: Realm,
  error: ChallengeError,
  signers: SignerRecord[],
): string {
  return [
    `Bearer realm="${realm}"`,
    `error="${error}"`,
    `error_description="${DESCRIPTIONS[error]}"`,
    `id="${signers.map((s) => quote(s.id)).join('|')}"`,
    `issuer="${signers.map((s) => quote(s.issuer)).join('|')}"`,
  ].join(' ')
}

/** The bearer token of an Authorization header, if it carries one. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header.trim())
  return m ? m[1] : undefined
}
