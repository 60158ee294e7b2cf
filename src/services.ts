import type { Config } from './config.js'
import { IdentityService } from './identities/identity-service.js'
import { SessionService } from './identities/session-service.js'
import { ExternalJwtVerifier } from './jwt/authenticate.js'
import { explainToken } from './jwt/explain.js'
import { JwksFetcher, type Resolver } from './jwt/jwks-fetch.js'
import { discoverSigner } from './jwt/oidc-discovery.js'
import { SignerKeys } from './jwt/signer-keys.js'
import { urlRefusal } from './jwt/ssrf-policy.js'
import { VerifiedTokenCache } from './jwt/verified-cache.js'
import { AuthPolicyService } from './policies/auth-policy-service.js'
import { SignerService } from './signers/signer-service.js'
import { type AuthPolicyRecord, AuthPolicyRepository } from './store/auth-policy-repository.js'
import type { Db } from './store/db.js'
import type { IdentityRecord } from './store/identity-repository.js'
import { IdentityRepository } from './store/identity-repository.js'
import { SessionRepository } from './store/session-repository.js'

const SESSION_PURGE_INTERVAL_MS = 60_000

export interface ServiceOptions {
  db: Db
  config: Config
  clock: () => Date
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }
  jwksFetchTimeoutMs?: number | undefined
  resolver?: Resolver | undefined
  verifiedCacheEntries?: number | undefined
}

/** Every domain service, wired to the store and to each other's change events. */
export function createServices(o: ServiceOptions) {
  const { db, config, clock } = o
  const sessions = new SessionService({
    db,
    sessions: new SessionRepository(db),
    identities: new IdentityRepository(db),
    clock,
    timeoutMs: config.sessionTimeoutMs,
  })
  const policyRepository = new AuthPolicyRepository(db)
  const fetchPolicy = { allowHttp: config.jwksAllowHttp, blockPrivate: config.jwksBlockPrivate }
  const signers = new SignerService({
    db,
    clock,
    referenceCheck: (id) => policyRepository.signerReference(id),
    jwksUrlCheck: (url) => urlRefusal(url, fetchPolicy),
  })
  const policies = new AuthPolicyService(db, signers.repository, clock)
  const identities = new IdentityService(db, policyRepository, sessions, clock)

  // Policies are read on every authenticated request; keep them in memory, dropped on change.
  const policyCache = new Map<string, AuthPolicyRecord | undefined>()
  const policy = (id: string) => {
    if (!policyCache.has(id)) policyCache.set(id, policyRepository.get(id))
    return policyCache.get(id)
  }
  const policyOf = (identity: IdentityRecord) => policy(identity.authPolicyId)

  const fetcher = new JwksFetcher({
    policy: fetchPolicy,
    timeoutMs: o.jwksFetchTimeoutMs ?? 5000,
    ...(o.resolver ? { resolver: o.resolver } : {}),
  })
  const keys = new SignerKeys({
    fetcher,
    clock,
    cooldownMs: config.jwksCooldownMs,
    maxAgeMs: config.jwksMaxAgeMs,
    log: o.log,
  })
  keys.load(signers.repository.all())
  const cache = new VerifiedTokenCache(clock, o.verifiedCacheEntries)
  const verifier = new ExternalJwtVerifier(
    keys,
    {
      byId: (id) => identities.repository.get(id),
      byExternalId: (externalId) => identities.repository.getByExternalId(externalId),
      policy,
    },
    { clock, clockToleranceMs: config.jwtClockToleranceMs },
    cache,
  )

  // Every change reaches the caches before the next request is served.
  signers.onChange((change) => {
    keys.apply(change)
    cache.dropSigner(change.signer.id)
  })
  identities.onChange((change) => cache.dropIdentity(change.identity.id))
  policies.onChange(() => {
    policyCache.clear()
    cache.clear()
  })

  // Expired sessions are refused when presented; this also clears the ones nobody presents again.
  const purge = setInterval(() => {
    const purged = sessions.purgeExpired()
    if (purged > 0) o.log.info({ purged }, 'expired sessions removed')
  }, SESSION_PURGE_INTERVAL_MS)
  purge.unref()

  return {
    sessions,
    signers,
    policies,
    identities,
    verifier,
    auth: { sessions, verifier, policyOf },
    discover: (issuer: string) => discoverSigner(issuer, fetcher, fetchPolicy),
    explain: (token: string) => explainToken(token, verifier),
    allowsPrimary: (identity: IdentityRecord, method: 'updb') =>
      method === 'updb' && policyOf(identity)?.updbAllowed === true,
    close: async () => {
      clearInterval(purge)
      keys.close()
      await fetcher.close()
    },
  }
}
