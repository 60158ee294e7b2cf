import type {
  AuditAction,
  AuditEntityType,
  AuditEventRecord,
  AuditRepository,
} from '../contract.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'
import { PgListRunner } from './list-runner.js'

interface AuditRow {
  id: string
  at: Date
  actor_id: string | null
  actor_name: string | null
  action: string
  entity_type: string
  entity_id: string
  request_id: string | null
  method: string | null
  changed_fields: string[]
}

function toRecord(r: AuditRow): AuditEventRecord {
  return {
    id: r.id,
    at: iso(r.at),
    actor: r.actor_id === null ? null : { id: r.actor_id, name: r.actor_name ?? '' },
    action: r.action as AuditAction, // written from an AuditAction
    entityType: r.entity_type as AuditEntityType, // written from an AuditEntityType
    entityId: r.entity_id,
    requestId: r.request_id,
    method: r.method,
    changedFields: r.changed_fields,
  }
}

const FIELDS = 10

/** Persistence of audit events on PostgreSQL. */
export class PgAuditRepository implements AuditRepository {
  private static readonly lists = new PgListRunner<AuditRow, AuditEventRecord>(
    'audit_events',
    toRecord,
  )

  constructor(private readonly db: Queryable) {}

  /** One multi-row INSERT, in the order given (so `seq` follows it). */
  async insertMany(events: AuditEventRecord[]): Promise<void> {
    if (events.length === 0) return
    const rows = events.map((_, r) => {
      const p = Array.from({ length: FIELDS }, (_, c) => `$${r * FIELDS + c + 1}`)
      return `(${p.join(', ')})`
    })
    const values = events.flatMap((e) => [
      e.id,
      e.at,
      e.actor?.id ?? null,
      e.actor?.name ?? null,
      e.action,
      e.entityType,
      e.entityId,
      e.requestId,
      e.method,
      JSON.stringify(e.changedFields),
    ])
    try {
      await this.db.query(
        `INSERT INTO audit_events (id, at, actor_id, actor_name, action, entity_type, entity_id,
           request_id, method, changed_fields) VALUES ${rows.join(', ')}`,
        values,
      )
    } catch (err) {
      throw mapPgError(err)
    }
  }

  list(query: ListQuery): Promise<ListPage<AuditEventRecord>> {
    return PgAuditRepository.lists.run(this.db, query)
  }

  async deleteBefore(before: string): Promise<number> {
    try {
      return (await this.db.query('DELETE FROM audit_events WHERE at < $1', [before])).rowCount ?? 0
    } catch (err) {
      throw mapPgError(err)
    }
  }
}
