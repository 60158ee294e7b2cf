import { fieldError } from '../errors.js'
import { fetchFailure, type GuardedJsonFetcher, isJsonObject } from './jwks-fetch.js'
import { type FetchPolicy, urlRefusal } from './ssrf-policy.js'

/** The signer fields an OpenID provider's discovery document proposes. */
export interface DiscoveredSigner {
  issuer: string
  jwksEndpoint: string
  externalAuthUrl: string | null
}

/** Where OpenID Connect Discovery 1.0 (section 4) publishes an issuer's configuration. */
export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
}

const MAX_URL = 2048 // a signer's jwksEndpoint and externalAuthUrl are at most this long

function refuse(issuer: string, reason: string): Error {
  return fieldError('INVALID_FIELD', 'issuer', reason, issuer)
}

/**
 * Why an issuer cannot be discovered, or undefined. OpenID Connect Discovery 1.0 (section 2) makes
 * an issuer an https URL with scheme, host and optional path, and no query or fragment; appending
 * the well-known path to one that has them would fetch some other document.
 */
function issuerRefusal(issuer: string): string | undefined {
  let url: URL
  try {
    url = new URL(issuer)
  } catch {
    return 'the issuer is not an absolute URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return 'the scheme of the issuer must be http or https'
  if (url.username !== '' || url.password !== '') return 'the issuer may not hold user info'
  if (url.search !== '' || issuer.includes('?')) return 'the issuer may not hold a query'
  if (url.hash !== '' || issuer.includes('#')) return 'the issuer may not hold a fragment'
  return undefined
}

/**
 * Fetches `<issuer>/.well-known/openid-configuration` under the JWKS fetch rules and proposes a
 * signer from it, creating nothing. The document must name exactly this issuer and a `jwks_uri`
 * the controller may fetch from. Throws INVALID_FIELD (field `issuer`) saying what went wrong.
 */
export async function discoverSigner(
  issuer: string,
  fetcher: GuardedJsonFetcher,
  policy: FetchPolicy,
): Promise<DiscoveredSigner> {
  const malformed = issuerRefusal(issuer)
  if (malformed) throw refuse(issuer, malformed)
  const url = discoveryUrl(issuer)
  let doc: unknown
  try {
    doc = await fetcher.fetchJson(url, 'application/json')
  } catch (err) {
    throw refuse(issuer, `discovery document ${url} could not be fetched: ${fetchFailure(err)}`)
  }
  if (!isJsonObject(doc)) throw refuse(issuer, 'the discovery document is not a JSON object')
  const { issuer: named, jwks_uri: jwks, authorization_endpoint: auth } = doc
  if (named !== issuer) {
    // What the document names, as a short string only: it is the provider's (or whoever answered
    // at that address), and a huge or deeply nested value has no place in an error.
    const shown =
      typeof named === 'string' && named.length <= MAX_URL
        ? `issuer ${JSON.stringify(named)}`
        : named === undefined
          ? 'no issuer'
          : typeof named === 'string'
            ? `an issuer of ${named.length} characters`
            : `an issuer that is not a string (${named === null ? 'null' : Array.isArray(named) ? 'an array' : typeof named})`
    throw refuse(issuer, `the discovery document names ${shown}, not exactly this one`)
  }
  if (typeof jwks !== 'string' || jwks === '' || jwks.length > MAX_URL) {
    throw refuse(issuer, `the discovery document has no jwks_uri of 1 to ${MAX_URL} characters`)
  }
  const refused = urlRefusal(jwks, policy)
  if (refused) throw refuse(issuer, `its jwks_uri ${jwks} may not be fetched from: ${refused}`)
  return {
    issuer,
    jwksEndpoint: jwks,
    externalAuthUrl:
      typeof auth === 'string' && auth !== '' && auth.length <= MAX_URL ? auth : null,
  }
}
