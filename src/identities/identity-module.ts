import { createHmac, randomBytes } from 'node:crypto'
import type { AuditService } from '../audit/audit-service.js'
import type { ChangeBus } from '../changes.js'
import type { AuthPolicyService } from '../policies/auth-policy-service.js'
import type { Store } from '../store/contract.js'
import { everyInterval, type TimerLog } from '../timers.js'
import { IdentityService } from './identity-service.js'
import { type LockoutRules, LoginThrottle, policyLockout } from './login-throttle.js'
import type { PasswordLoginDeps } from './password-login.js'
import { SessionService } from './session-service.js'

const SESSION_PURGE_INTERVAL_MS = 60_000

/** The key of `nameDigest`: this process's own, never logged, so a digest cannot be reversed. */
const NAME_DIGEST_KEY = randomBytes(32)

/** 16 hex characters that are the same for one user name through this process's life. */
function nameDigest(name: string): string {
  return createHmac('sha256', NAME_DIGEST_KEY).update(name).digest('hex').slice(0, 16)
}

/** Identities and their API sessions; expired sessions are purged every minute. */
export function buildIdentities(o: {
  store: Store
  changes: ChangeBus
  policies: AuthPolicyService
  clock: () => Date
  audit: AuditService
  sessionTimeoutMs: number
  maxSessionsPerIdentity?: number | undefined
  /** The brute-force backoff of password logins. */
  lockout?: LockoutRules | undefined
  log: TimerLog
}) {
  const { store, changes, clock, audit } = o
  const identities = new IdentityService(store, changes, o.policies, clock, audit)
  const sessions = new SessionService({
    store,
    identity: (id) => identities.find(id),
    keptIdentity: (id) => identities.keptIdentity(id),
    clock,
    timeoutMs: o.sessionTimeoutMs,
    maxPerIdentity: o.maxSessionsPerIdentity,
    audit,
    onChange: () => changes.emit({ entity: 'session', op: 'upsert', id: '', remote: false }),
  })
  const throttle = new LoginThrottle(store.repos.loginFailures, clock, o.lockout)
  // Expired sessions are refused when presented; this also clears the ones nobody presents again.
  const stop = everyInterval(
    SESSION_PURGE_INTERVAL_MS,
    async () => (await sessions.purgeExpired()) + (await throttle.purge()),
    o.log,
    'sessions',
  )
  const failedLogins = new Set<Promise<void>>()
  const passwords: PasswordLoginDeps = {
    credentials: (name) => identities.credentials(name),
    allowsPrimary: (identity, method) => o.policies.allowsPrimary(identity, method),
    throttle,
    lockoutOf: async (identity) => {
      const policy = await o.policies.policyOf(identity)
      return policy && policyLockout(policy.updbMaxAttempts, policy.updbLockoutDurationMinutes)
    },
    // Audited (and so logged at info) with the user name and why; never the password. A name no
    // identity has is logged only (see `loggedOnly`), and without its text: it may be a password
    // typed into the wrong field. A keyed digest of it tells repeats of one name apart instead.
    onFailure: async (username, identity, reason, requestId) => {
      const name = identity ? username : ''
      const event = audit.event(
        { actor: { id: identity?.id ?? '', name }, requestId },
        {
          action: 'login-failed',
          entityType: 'identities',
          entityId: identity?.id ?? '',
          method: 'password',
          changedFields: [reason],
        },
      )
      if (!identity) return audit.loggedOnly(event, { unknownNameDigest: nameDigest(username) })
      // Not awaited: the 401 of a known name must take no longer than an unknown name's (which
      // stores nothing), or the time of the answer would tell which names exist. `drain` waits.
      const write = store.repos.audit.insertMany([event]).then(
        () => audit.logged(event),
        (err: unknown) => o.log.warn({ err, eventId: event.id }, 'failed login not stored'),
      )
      failedLogins.add(write)
      void write.finally(() => failedLogins.delete(write))
    },
  }
  /** Resolves once every failed login's audit event is stored (before the store closes). */
  const drain = async () => {
    await Promise.all(failedLogins)
  }
  return { identities, sessions, passwords, drain, close: stop }
}
