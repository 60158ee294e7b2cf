import type { Store } from '../store/contract.js'
import { everyInterval, type TimerLog } from '../timers.js'
import { AuditService } from './audit-service.js'

const AUDIT_PURGE_INTERVAL_MS = 60_000

/** The audit trail, written by the domain services, and its retention purge (every minute). */
export function buildAudit(o: {
  store: Store
  clock: () => Date
  log: TimerLog
  retentionMs: number
}) {
  const audit = new AuditService({
    store: o.store,
    clock: o.clock,
    log: o.log,
    retentionMs: o.retentionMs,
  })
  const stop = everyInterval(
    AUDIT_PURGE_INTERVAL_MS,
    () => audit.purgeExpired(),
    o.log,
    'audit events',
  )
  return { audit, close: stop }
}
