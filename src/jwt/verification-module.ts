import type { IdentityService } from '../identities/identity-service.js'
import type { AuthPolicyService } from '../policies/auth-policy-service.js'
import { ExternalJwtVerifier } from './authenticate.js'
import { explainToken } from './explain.js'
import type { SignerKeys } from './signer-keys.js'
import { VerifiedTokenCache } from './verified-cache.js'

/** The external JWT verifier (login, secondary factor, explain-a-token) and its cache. */
export function buildVerification(o: {
  keys: SignerKeys
  identities: IdentityService
  policies: AuthPolicyService
  clock: () => Date
  clockToleranceMs: number
  stale: () => boolean
  verifiedCacheEntries?: number | undefined
}) {
  const { keys, identities, policies, clock } = o
  const cache = new VerifiedTokenCache(clock, o.verifiedCacheEntries, (signerId, kid) =>
    keys.hasKid(signerId, kid),
  )
  keys.onKidsRetired((signerId, kids) => cache.dropKids(signerId, kids))
  const verifier = new ExternalJwtVerifier(
    keys,
    {
      byId: (id) => identities.find(id),
      byExternalId: (externalId) => identities.findByExternalId(externalId),
      policy: (id) => policies.cached(id),
      stale: o.stale,
    },
    { clock, clockToleranceMs: o.clockToleranceMs },
    cache,
  )
  return { cache, verifier, explain: (token: string) => explainToken(token, verifier) }
}
