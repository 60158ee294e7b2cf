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

const INSERT_MANY = `INSERT INTO audit_events (id, at, actor_id, actor_name, action, entity_type,
    entity_id, request_id, method, changed_fields)
  SELECT id, at, actor_id, actor_name, action, entity_type, entity_id, request_id, method,
    changed_fields::jsonb
  FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[]) WITH ORDINALITY
    AS e(id, at, actor_id, actor_name, action, entity_type, entity_id, request_id, method,
      changed_fields, n)
  ORDER BY n`

/** Persistence of audit events on PostgreSQL. */
export class PgAuditRepository implements AuditRepository {
  private static readonly lists = new PgListRunner<AuditRow, AuditEventRecord>(
    'audit_events',
    toRecord,
  )

  constructor(private readonly db: Queryable) {}

  /**
   * One INSERT of every event, in the order given (so `seq` follows it), its rows as arrays: the
   * statement's text is the same whatever the count, so it is parsed and planned once per
   * connection.
   */
  async insertMany(events: AuditEventRecord[]): Promise<void> {
    if (events.length === 0) return
    try {
      await this.db.query({
        name: 'audit-insert-many',
        text: INSERT_MANY,
        values: [
          events.map((e) => e.id),
          events.map((e) => e.at),
          events.map((e) => e.actor?.id ?? null),
          events.map((e) => e.actor?.name ?? null),
          events.map((e) => e.action),
          events.map((e) => e.entityType),
          events.map((e) => e.entityId),
          events.map((e) => e.requestId),
          events.map((e) => e.method),
          events.map((e) => JSON.stringify(e.changedFields)),
        ],
      })
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
