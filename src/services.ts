import { AuditService } from './audit/audit-service.js'
import { ChangeBus } from './changes.js'
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
import type { SignerRecord, Store } from './store/types.js'

const SESSION_PURGE_INTERVAL_MS = 60_000
const AUDIT_PURGE_INTERVAL_MS = 60_000

export interface ServiceOptions {
  store: Store
  config: Config
  clock: () => Date
  log: {
    info(obj: object, msg: string): void
    warn(obj: object, msg: string): void
    error(obj: object, msg: string): void
  }
  jwksFetchTimeoutMs?: number | undefined
  resolver?: Resolver | undefined
  verifiedCacheEntries?: number | undefined
}

/**
 * The composition root: the store is opened once (by the caller) and handed to every service;
 * every cache follows the one change bus, fed by local writes and by other instances.
 */
export async function createServices(o: ServiceOptions) {
  const { store, config, clock } = o
  const changes = new ChangeBus()
  const fetchPolicy = { allowHttp: config.jwksAllowHttp, blockPrivate: config.jwksBlockPrivate }

  // --- audit events (issue 13 item 3): written by the domain services, purged on a timer ---
  const audit = new AuditService({ store, clock, log: o.log, retentionMs: config.auditRetentionMs })
  const auditPurge = setInterval(() => {
    audit.purgeExpired().then(
      (purged) => {
        if (purged > 0) o.log.info({ purged }, 'expired audit events removed')
      },
      (err: unknown) => o.log.warn({ err }, 'audit event purge failed'),
    )
  }, AUDIT_PURGE_INTERVAL_MS)
  auditPurge.unref()
  // --- end audit events ---

  const policies = new AuthPolicyService(store, changes, clock, audit)
  const identities = new IdentityService(store, changes, policies, clock, audit)
  const signers = new SignerService({
    store,
    changes,
    clock,
    audit,
    jwksUrlCheck: (url) => urlRefusal(url, fetchPolicy),
  })
  const sessions = new SessionService({
    store,
    identity: (id) => identities.find(id),
    clock,
    timeoutMs: config.sessionTimeoutMs,
    audit,
    keepSessions: store.kind === 'sqlite',
    onChange: () => changes.emit({ entity: 'session', op: 'upsert', id: '', remote: false }),
  })

  const fetcher = new JwksFetcher({
    policy: fetchPolicy,
    timeoutMs: o.jwksFetchTimeoutMs ?? 5000,
    ...(o.resolver ? { resolver: o.resolver } : {}),
  })
  const repo = store.repos.signers
  const keys = new SignerKeys({
    fetcher,
    clock,
    cooldownMs: config.jwksCooldownMs,
    maxAgeMs: config.jwksMaxAgeMs,
    log: o.log,
    source: {
      byId: (id) => repo.get(id),
      byIssuer: (issuer) => repo.getByIssuer(issuer),
      all: () => repo.all(),
      stale: () => store.stale,
    },
  })
  keys.load(await repo.all())
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
      stale: () => store.stale,
    },
    { clock, clockToleranceMs: config.jwtClockToleranceMs },
    cache,
  )

  // Every change reaches the caches before the next request is served.
  changes.on((event) => {
    if (event.entity === 'signer') {
      cache.dropSigner(event.id)
      const record = event.record as SignerRecord | undefined // signer events carry signers
      if (event.remote || !record) void keys.reload(event.id)
      else if (event.op === 'delete') keys.apply({ type: 'delete', signer: record })
      else {
        const previous = event.previous as SignerRecord | undefined // as record above
        keys.apply({ type: 'upsert', signer: record, previous })
      }
    }
    // refresh-keys through another instance: every instance fetches its own copy now.
    if (event.entity === 'signer-keys' && event.remote) void keys.refresh(event.id)
    if (event.entity === 'identity') {
      cache.dropIdentity(event.id)
      sessions.forgetIdentity(event.id)
    }
    if (event.entity === 'policy') cache.clear()
  })
  // Other instances' changes arrive on the same bus; when some may have been missed, nothing
  // cached is trusted until every cache has been reread.
  store.onFeed((event) => {
    if (event.type === 'change') changes.emit({ ...event.change, remote: true })
    else {
      cache.clear()
      if (event.type === 'fresh') void keys.reloadAll()
    }
  })

  // Expired sessions are refused when presented; this also clears the ones nobody presents again.
  const purge = setInterval(() => {
    sessions.purgeExpired().then(
      (purged) => {
        if (purged > 0) o.log.info({ purged }, 'expired sessions removed')
      },
      (err: unknown) => o.log.warn({ err }, 'expired session purge failed'),
    )
  }, SESSION_PURGE_INTERVAL_MS)
  purge.unref()

  return {
    store,
    changes,
    sessions,
    signers,
    policies,
    identities,
    audit,
    verifier,
    keys,
    /** Key status of this instance, and refresh-keys (this instance now, every other one told). */
    signerKeys: {
      status: (id: string) => keys.status(id),
      refresh: async (id: string) => {
        const status = await keys.refresh(id)
        if (status) {
          await store.transaction((tx) => tx.publish({ entity: 'signer-keys', op: 'refresh', id }))
        }
        return status
      },
    },
    auth: {
      sessions,
      verifier,
      policyOf: (i: Parameters<typeof policies.policyOf>[0]) => policies.policyOf(i),
    },
    discover: (issuer: string) => discoverSigner(issuer, fetcher, fetchPolicy),
    explain: (token: string) => explainToken(token, verifier),
    /** Resolves when the store answers; rejects otherwise (the health check). */
    health: () => store.ping(),
    close: async () => {
      clearInterval(purge)
      clearInterval(auditPurge)
      keys.close()
      await fetcher.close()
    },
  }
}

export type Services = Awaited<ReturnType<typeof createServices>>
