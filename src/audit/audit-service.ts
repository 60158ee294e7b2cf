import { createHash } from 'node:crypto'
import { newId } from '../ids.js'
import type {
  AuditAction,
  AuditEntityType,
  AuditEventRecord,
  Store,
  UnitOfWork,
} from '../store/contract.js'
import { type ListParams, parseListQuery } from '../store/query/list-query.js'
import { AUDIT_LIST_SPEC } from '../store/sqlite/audit-repository.js'

export type { AuditEventRecord }

/** Who asked for a change, as the route knows it: the session's identity and the request id. */
export interface AuditContext {
  actor: { id: string; name: string } | null
  requestId: string | null
}

/** Internal changes (no request): no actor, no request id. */
export const NO_AUDIT_CONTEXT: AuditContext = { actor: null, requestId: null }

/** What one event records, besides who, when and in which request. */
export interface AuditEntry {
  action: AuditAction
  entityType: AuditEntityType
  entityId: string
  /** Field names, never values. */
  changedFields?: string[]
  method?: string
}

export interface AuditServiceOptions {
  store: Store
  clock: () => Date
  log: { info(obj: object, msg: string): void }
  /** Events older than this are purged. */
  retentionMs: number
}

/**
 * The audit trail: each management write and each login and logout, stored in the unit of work of
 * the change (a change that fails records nothing) and, once committed, logged as one line.
 */
export class AuditService {
  readonly filterableFields = Object.keys(AUDIT_LIST_SPEC.filterable)

  constructor(private readonly o: AuditServiceOptions) {}

  /** A new event of `ctx` (the caller stores it). */
  event(ctx: AuditContext | undefined, entry: AuditEntry, at = this.o.clock()): AuditEventRecord {
    return {
      id: newId(),
      at: at.toISOString(),
      actor: ctx?.actor ?? null,
      action: entry.action,
      entityType: entry.entityType,
      entityId: entry.entityId,
      requestId: ctx?.requestId ?? null,
      method: entry.method ?? null,
      changedFields: entry.changedFields ?? [],
    }
  }

  /** Stores an event in the unit of work `tx`; log it with `logged` once `tx` has committed. */
  async record(
    tx: UnitOfWork,
    ctx: AuditContext | undefined,
    entry: AuditEntry,
  ): Promise<AuditEventRecord> {
    const event = this.event(ctx, entry)
    await tx.audit.insertMany([event])
    return event
  }

  /**
   * One log line per committed event (names and ids only: no secret is ever in an event); `extra`
   * adds ids the event does not store (a login's authenticator).
   */
  logged(event: AuditEventRecord, extra?: Record<string, string>): void {
    const { id, actor, entityId, ...rest } = event
    this.o.log.info(
      {
        audit: true,
        eventId: id,
        actorId: actor?.id ?? null,
        actorName: actor?.name ?? null,
        ...rest,
        ...loggedEntity(event.entityType, entityId),
        ...extra,
      },
      'audit event',
    )
  }

  /**
   * A failed login under a name no identity has: the same line as a stored event's, marked
   * `stored: false`, and no row. Anyone can send such names, and a row for each would let refused
   * requests fill the database (the lockout bounds a known name's failures, not the unknown names).
   */
  loggedOnly(event: AuditEventRecord, extra?: Record<string, string>): void {
    this.logged(event, { ...extra, stored: 'false' })
  }

  /** The list, newest first unless a sort is given. */
  list(params: ListParams) {
    const query = parseListQuery(params, AUDIT_LIST_SPEC)
    // Only the tie-breaker: no sort was asked for.
    if (query.orderBy.length === 1) {
      query.orderBy = [
        { column: 'at', desc: true },
        { column: AUDIT_LIST_SPEC.idColumn, desc: true },
      ]
    }
    return this.o.store.repos.audit.list(query)
  }

  /**
   * The trail of a service built outside the composition root (a benchmark, a unit test): events
   * are stored as always, but not logged, and kept for the default retention.
   */
  static unlogged(store: Store, clock: () => Date): AuditService {
    return new AuditService({ store, clock, log: { info: () => {} }, retentionMs: 720 * 3_600_000 })
  }

  /** Removes events older than the retention; resolves with how many. */
  purgeExpired(): Promise<number> {
    const before = new Date(this.o.clock().getTime() - this.o.retentionMs).toISOString()
    return this.o.store.repos.audit.deleteBefore(before)
  }
}

/**
 * How a log line names an event's entity. A session's id is the first half of its token, and no
 * session id reaches a log line: a login or logout names it by `sessionDigest`, the first 16 hex
 * characters of the id's SHA-256 (the same on every instance, so a login and its logout match; an
 * admin finds the event by its `eventId`, or computes the digest of an `entityId` the audit list
 * shows).
 */
function loggedEntity(entityType: string, entityId: string) {
  if (entityType !== 'api-sessions') return { entityId }
  return { sessionDigest: createHash('sha256').update(entityId).digest('hex').slice(0, 16) }
}
