import { buildAudit } from './audit/audit-module.js'
import { buildBackups } from './backups/backup-module.js'
import { ChangeBus } from './changes.js'
import type { Config } from './config.js'
import { ControllerRegistry, type ControllerSelf } from './controllers/controller-registry.js'
import { controllerSelf } from './controllers/self.js'
import type { ControllerDirectory } from './enrollment/controllers.js'
import type { EnrollmentCa } from './enrollment/enrollment-ca.js'
import { buildEnrollment } from './enrollment/enrollment-module.js'
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
  /** The controllers enrollment answers name (the controllers list plugs in here); default: this one. */
  controllers?: ControllerDirectory | undefined
  /** Signs enrollment CSRs; absent: CSRs are refused. */
  enrollCa?: EnrollmentCa | undefined
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
  // Other instances' changes can arrive while the caches below are loaded, before followChanges
  // hands them on (the signer keys are read now, from a read that may predate such a change): any
  // feed event until then, a change or a lost and restored connection, means a reread at the end.
  let heardWhileStarting = false
  store.onFeed(() => {
    heardWhileStarting = true
  })
  const audit = buildAudit({ store, clock, log, retentionMs: config.auditRetentionMs })
  const policies = new AuthPolicyService(store, changes, clock, audit.audit)
  const people = buildIdentities({
    store,
    changes,
    policies,
    clock,
    audit: audit.audit,
    sessionTimeoutMs: config.sessionTimeoutMs,
    maxSessionsPerIdentity: config.maxSessionsPerIdentity,
    lockout: {
      attempts: config.loginLockoutAttempts,
      firstMs: 1000,
      maxMs: config.loginLockoutMaxMs,
    },
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
  const { enrollment } = buildEnrollment({
    store,
    changes,
    audit: audit.audit,
    verifier: verification.verifier,
    policies,
    clock,
    // The controllers list's client view (OpenZiti 2.1's `controllers` in enrollment answers).
    controllers: o.controllers ?? controllers.summaries,
    ca: o.enrollCa,
    certValidityMs: config.enrollCertValidityMs,
  })
  const backups = buildBackups({
    store,
    dbPath: config.dbPath,
    snapshotDir: config.snapshotDir,
    snapshotKeep: config.snapshotKeep,
    clock,
    audit: audit.audit,
    log,
  })
  followChanges({ changes, store, ...signers, ...verification, sessions: people.sessions })
  if (heardWhileStarting) {
    // What the feed said before followChanges listened: every signer is reread (lookups wait for
    // it) and nothing verified so far is trusted.
    verification.cache.clear()
    void signers.keys.reloadAll()
  }

  const { sessions, identities } = people
  const { verifier } = verification
  return {
    store,
    changes,
    sessions,
    signers: signers.signers,
    policies,
    identities,
    passwords: people.passwords,
    audit: audit.audit,
    verifier,
    keys: signers.keys,
    signerKeys: signers.signerKeys,
    auth: {
      sessions,
      verifier,
      policyOf: (i: Parameters<typeof policies.policyOf>[0]) => policies.policyOf(i),
      keptPolicyOf: (i: Parameters<typeof policies.policyOf>[0]) => policies.keptPolicyOf(i),
    },
    discover: signers.discover,
    enrollment,
    explain: verification.explain,
    /** OpenZiti's summary counts (`GET /summary`): each list's total, and the stored sessions. */
    counts: async () => {
      const one = { limit: '1' }
      const [i, s, p, a] = await Promise.all([
        identities.list(one),
        signers.signers.list(one),
        policies.list(one),
        store.repos.sessions.count(),
      ])
      return {
        identities: i.totalCount,
        externalJwtSigners: s.totalCount,
        authPolicies: p.totalCount,
        apiSessions: a,
      }
    },
    backups,
    controllers,
    /** Resolves when the store answers; rejects otherwise (the health check). */
    health: () => store.ping(),
    close: async () => {
      // First, while the store is open: a clean shutdown leaves the controllers list.
      await controllers.stop().catch((err: unknown) => {
        log.warn({ err }, 'leaving the controllers list failed')
      })
      await backups.close()
      await people.sessions.drain()
      await people.drain()
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
      else keys.apply({ type: 'upsert', signer: record })
    }
    // refresh-keys through another instance: every instance fetches its own copy now.
    if (event.entity === 'signer-keys' && event.remote) void keys.refresh(event.id)
    if (event.entity === 'identity') {
      cache.dropIdentity(event.id)
      sessions.forgetIdentity(event.id)
    }
    if (event.entity === 'policy') cache.clear()
    // Sessions ended through another instance (this one forgets its own as it ends them).
    if (event.remote && event.entity === 'session' && event.op === 'delete') {
      sessions.forgetSession(event.id)
    }
    if (event.remote && event.entity === 'identity-sessions') sessions.forgetIdentity(event.id)
  })
  // Other instances' changes arrive on the same bus; when some may have been missed, nothing
  // cached is trusted until every cache has been reread.
  o.store.onFeed((event) => {
    if (event.type === 'change') {
      // An own change goes round once more, as another instance's would (rereads and drops are
      // idempotent): the instance then holds what was stored even when the commit's answer was
      // lost. Not a key refresh (it ran here before it was announced), nor the sessions a login
      // batch's cap ended: a batch whose answer was lost forgets its identities' kept sessions
      // itself (SessionService), and doing it for every batch would empty the session cache of
      // every identity at its cap on each of its logins.
      if (event.own && ['signer-keys', 'identity-sessions'].includes(event.change.entity)) return
      changes.emit({ ...event.change, remote: true })
    } else {
      cache.clear()
      if (event.type === 'fresh') void keys.reloadAll()
    }
  })
}

export type Services = Awaited<ReturnType<typeof createServices>>
