import { buildAudit } from './audit/audit-module.js'
import { ChangeBus } from './changes.js'
import type { Config } from './config.js'
import { ControllerRegistry, type ControllerSelf } from './controllers/controller-registry.js'
import { controllerSelf } from './controllers/self.js'
import { buildIdentities } from './identities/identity-module.js'
import type { Resolver } from './jwt/jwks-fetch.js'
import { buildVerification } from './jwt/verification-module.js'
import { AuthPolicyService } from './policies/auth-policy-service.js'
import { buildSigners } from './signers/signer-module.js'
import type { SignerRecord, Store } from './store/contract.js'

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
  /** This instance in the controllers list (default: from `config`, served over plain HTTP). */
  self?: ControllerSelf | undefined
}

/**
 * The composition root: the store is opened once (by the caller) and handed to every domain;
 * every cache follows the one change bus, fed by local writes and by other instances.
 */
export async function createServices(o: ServiceOptions) {
  const { store, config, clock, log } = o
  const changes = new ChangeBus()
  const audit = buildAudit({ store, clock, log, retentionMs: config.auditRetentionMs })
  const policies = new AuthPolicyService(store, changes, clock, audit.audit)
  const people = buildIdentities({
    store,
    changes,
    policies,
    clock,
    audit: audit.audit,
    sessionTimeoutMs: config.sessionTimeoutMs,
    log,
  })
  const signers = await buildSigners({
    store,
    changes,
    clock,
    audit: audit.audit,
    log,
    fetchPolicy: { allowHttp: config.jwksAllowHttp, blockPrivate: config.jwksBlockPrivate },
    jwksCooldownMs: config.jwksCooldownMs,
    jwksMaxAgeMs: config.jwksMaxAgeMs,
    jwksFetchTimeoutMs: o.jwksFetchTimeoutMs,
    resolver: o.resolver,
  })
  const verification = buildVerification({
    keys: signers.keys,
    identities: people.identities,
    policies,
    clock,
    clockToleranceMs: config.jwtClockToleranceMs,
    stale: () => store.stale,
    verifiedCacheEntries: o.verifiedCacheEntries,
  })
  const controllers = new ControllerRegistry({
    store,
    clock,
    self: o.self ?? controllerSelf(config),
    heartbeatMs: config.heartbeatMs,
    log,
  })
  await controllers.start()
  followChanges({ changes, store, ...signers, ...verification, sessions: people.sessions })

  const { sessions, identities } = people
  const { verifier } = verification
  return {
    store,
    changes,
    sessions,
    signers: signers.signers,
    policies,
    identities,
    audit: audit.audit,
    verifier,
    keys: signers.keys,
    signerKeys: signers.signerKeys,
    auth: {
      sessions,
      verifier,
      policyOf: (i: Parameters<typeof policies.policyOf>[0]) => policies.policyOf(i),
    },
    discover: signers.discover,
    explain: verification.explain,
    controllers,
    /** Resolves when the store answers; rejects otherwise (the health check). */
    health: () => store.ping(),
    close: async () => {
      // First, while the store is open: a clean shutdown leaves the controllers list.
      await controllers.stop().catch((err: unknown) => {
        log.warn({ err }, 'leaving the controllers list failed')
      })
      await people.sessions.drain()
      people.close()
      audit.close()
      await signers.close()
    },
  }
}

type Parts = Awaited<ReturnType<typeof buildSigners>> & ReturnType<typeof buildVerification>

/** Every change reaches the caches before the next request is served, local or remote. */
function followChanges(o: {
  changes: ChangeBus
  store: Store
  keys: Parts['keys']
  cache: Parts['cache']
  sessions: ReturnType<typeof buildIdentities>['sessions']
}): void {
  const { changes, keys, cache, sessions } = o
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
  o.store.onFeed((event) => {
    if (event.type === 'change') changes.emit({ ...event.change, remote: true })
    else {
      cache.clear()
      if (event.type === 'fresh') void keys.reloadAll()
    }
  })
}

export type Services = Awaited<ReturnType<typeof createServices>>
