import type { SignerRecord } from '../store/sqlite/signer-repository.js'
import type { ChallengeError } from './verify.js'

const DESCRIPTIONS: Record<ChallengeError, string> = {
  missing: 'no matching token was provided',
  invalid: 'token is invalid',
  expired: 'token expired',
}

// What a header value carries as is: tab, visible ASCII, space and visible Latin-1. Everything
// else (control characters, DEL, C1 controls, anything above U+00FF such as emoji), `%` itself
// and the list separator `|` are percent-encoded as UTF-8: decodeURIComponent gives each value back.
const UNSAFE = /[^\t\x20-\x24\x26-\x7b\x7d\x7e\xa0-\xff]/gu

function percentEncode(char: string): string {
  // Buffer (unlike encodeURIComponent) never throws: a lone surrogate becomes U+FFFD.
  return [...Buffer.from(char, 'utf8')]
    .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
    .join('')
}

/**
 * Quoted-string content for any stored string: characters a header cannot carry percent-encoded,
 * then `"` and `\` backslash-escaped, so the header is always valid and reversible.
 */
export function quote(value: string): string {
  return value.replace(UNSAFE, percentEncode).replace(/["\\]/g, '\\$&')
}

export type Realm = 'openziti-primary-ext-jwt' | 'openziti-secondary-ext-jwt'

/**
 * A `WWW-Authenticate` Bearer challenge in the edge API's form: space-separated parameters, the
 * signers' ids and issuers joined with `|`.
 */
export function bearerChallenge(
  realm: Realm,
  error: ChallengeError,
  signers: Pick<SignerRecord, 'id' | 'issuer'>[],
): string {
  const head = [
    `Bearer realm="${realm}"`,
    `error="${error}"`,
    `error_description="${DESCRIPTIONS[error]}"`,
  ]
  const named = [
    ...head,
    `id="${signers.map((s) => quote(s.id)).join('|')}"`,
    `issuer="${signers.map((s) => quote(s.issuer)).join('|')}"`,
  ].join(' ')
  // Clients and balancers refuse a whole response whose headers pass 8 to 16 KB (Node's own client
  // at 16 KB): past MAX_CHALLENGE, the signers are left out rather than listed in part.
  return named.length <= MAX_CHALLENGE ? named : head.join(' ')
}

/** The longest challenge that names the signers (a few dozen of them). */
export const MAX_CHALLENGE = 4096

const MAX_BEARERS = 3
// `Bearer <token>`, the scheme in any case, whitespace around allowed.
const BEARER = /^\s*Bearer\s+(\S+)\s*$/i

/** What `token` reads from each Authorization header's value, in order, at most three. */
function fromAuthorization(
  rawHeaders: string[],
  token: (value: string) => string | undefined,
): string[] {
  const tokens: string[] = []
  for (let i = 0; i + 1 < rawHeaders.length && tokens.length < MAX_BEARERS; i += 2) {
    const name = rawHeaders[i]
    const value = rawHeaders[i + 1]
    if (name === undefined || value === undefined) break
    if (name.length !== 13 || name.toLowerCase() !== 'authorization') continue
    const found = token(value)
    if (found !== undefined) tokens.push(found)
  }
  return tokens
}

const strictBearer = (value: string): string | undefined => BEARER.exec(value)?.[1]

/**
 * The bearer tokens of a request's Authorization headers, in order, at most three. Node keeps only
 * the first Authorization header, so the raw header list is read: a client may send a primary and a
 * secondary token as two headers.
 */
export function bearerTokens(rawHeaders: string[]): string[] {
  return fromAuthorization(rawHeaders, strictBearer)
}

const WHITESPACE = /\s/

const SCHEME = 'bearer'

function quickBearer(raw: string): string | undefined {
  // trim() removes exactly what \s matches: the value ends on a character of the token.
  const value = raw.trim()
  if (value.length < 8) return undefined
  // The scheme in any case, read code by code (no copies): `| 0x20` turns only 'B' into 'b', and
  // so on for each letter of "bearer".
  for (let i = 0; i < SCHEME.length; i++) {
    if ((value.charCodeAt(i) | 0x20) !== SCHEME.charCodeAt(i)) return undefined
  }
  if (!WHITESPACE.test(value.charAt(6))) return undefined
  return value.slice(7).trimStart()
}

/**
 * bearerTokens' quick form, for a lookup among tokens verified before, on every request of a
 * session under a secondary-factor policy: the scheme and the whitespace around the token are
 * checked, not the token's own characters (a scan of the whole token, most of bearerTokens' time).
 * Any of these that is a verified token is one of bearerTokens' (a verified token holds no
 * whitespace, see ExternalJwtVerifier.match), at the same place or earlier; anything else must
 * read bearerTokens.
 */
export function bearerCandidates(rawHeaders: string[]): string[] {
  return fromAuthorization(rawHeaders, quickBearer)
}

/** Whether a string holds whitespace (no bearer token does). */
export function hasWhitespace(value: string): boolean {
  return WHITESPACE.test(value)
}
