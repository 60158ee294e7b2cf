import type { AuditService } from '../audit/audit-service.js'
import type { ChangeBus } from '../changes.js'
import type { AuthPolicyService } from '../policies/auth-policy-service.js'
import type { Store } from '../store/contract.js'
import { everyInterval, type TimerLog } from '../timers.js'
import { IdentityService } from './identity-service.js'
import { SessionService } from './session-service.js'

const SESSION_PURGE_INTERVAL_MS = 60_000

/** Identities and their API sessions; expired sessions are purged every minute. */
export function buildIdentities(o: {
  store: Store
  changes: ChangeBus
  policies: AuthPolicyService
  clock: () => Date
  audit: AuditService
  sessionTimeoutMs: number
  log: TimerLog
}) {
  const { store, changes, clock, audit } = o
  const identities = new IdentityService(store, changes, o.policies, clock, audit)
  const sessions = new SessionService({
    store,
    identity: (id) => identities.find(id),
    clock,
    timeoutMs: o.sessionTimeoutMs,
    audit,
    // One process owns a SQLite file, so its sessions can live in memory; instances sharing
    // PostgreSQL must read them from the database.
    keepSessions: store.kind === 'sqlite',
    onChange: () => changes.emit({ entity: 'session', op: 'upsert', id: '', remote: false }),
  })
  // Expired sessions are refused when presented; this also clears the ones nobody presents again.
  const stop = everyInterval(
    SESSION_PURGE_INTERVAL_MS,
    () => sessions.purgeExpired(),
    o.log,
    'sessions',
  )
  return { identities, sessions, close: stop }
}
