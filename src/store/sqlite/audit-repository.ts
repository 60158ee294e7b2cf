import type { AuditAction, AuditEntityType, AuditEventRecord } from '../contract.js'
import type { ListPage, ListQuery, ListSpec } from '../query/list-query.js'
import type { Db } from './connection.js'
import { ListRunner } from './list-runner.js'

export type { AuditEventRecord }

interface AuditRow {
  id: string
  at: string
  actor_id: string | null
  actor_name: string | null
  action: string
  entity_type: string
  entity_id: string
  request_id: string | null
  method: string | null
  changed_fields: string
}

function toRecord(r: AuditRow): AuditEventRecord {
  return {
    id: r.id,
    at: r.at,
    actor: r.actor_id === null ? null : { id: r.actor_id, name: r.actor_name ?? '' },
    action: r.action as AuditAction, // written from an AuditAction by toRow
    entityType: r.entity_type as AuditEntityType, // written from an AuditEntityType by toRow
    entityId: r.entity_id,
    requestId: r.request_id,
    method: r.method,
    changedFields: JSON.parse(r.changed_fields) as string[], // written by toRow
  }
}

/** The insert's parameters, in the order of its column list. */
type AuditParams = [
  id: string,
  at: string,
  actorId: string | null,
  actorName: string | null,
  action: string,
  entityType: string,
  entityId: string,
  requestId: string | null,
  method: string | null,
  changedFields: string,
]

function toParams(e: AuditEventRecord): AuditParams {
  return [
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
  ]
}

/** Filters and sorts of the audit event list; `seq` breaks ties between events of one millisecond. */
export const AUDIT_LIST_SPEC: ListSpec = {
  pagedOnly: true, // a row per login and logout
  filterable: {
    id: { column: 'id', type: 'string' },
    at: { column: 'at', type: 'datetime' },
    action: { column: 'action', type: 'string' },
    entityType: { column: 'entity_type', type: 'string' },
    entityId: { column: 'entity_id', type: 'string' },
    'actor.id': { column: 'actor_id', type: 'string' },
    'actor.name': { column: 'actor_name', type: 'string' },
    method: { column: 'method', type: 'string' },
    requestId: { column: 'request_id', type: 'string' },
  },
  sortable: {
    at: 'at',
    action: 'action',
    entityType: 'entity_type',
    entityId: 'entity_id',
    'actor.id': 'actor_id',
  },
  idColumn: 'seq',
}

/** Persistence of audit events. */
export class AuditRepository {
  private readonly insertStmt
  private readonly deleteBeforeStmt
  private readonly lists: ListRunner<AuditRow, AuditEventRecord>

  constructor(db: Db) {
    // Positional parameters (binding from an object looks each name up): one row per login.
    this.insertStmt = db.prepare<AuditParams>(
      `INSERT INTO audit_events (id, at, actor_id, actor_name, action, entity_type, entity_id,
         request_id, method, changed_fields)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    this.deleteBeforeStmt = db.prepare<[string]>('DELETE FROM audit_events WHERE at < ?')
    this.lists = new ListRunner(db, 'audit_events', toRecord)
  }

  /** Call inside a transaction: the events of one unit of work. */
  insertMany(events: AuditEventRecord[]): void {
    for (const e of events) this.insertStmt.run(...toParams(e))
  }

  list(query: ListQuery): ListPage<AuditEventRecord> {
    return this.lists.run(query)
  }

  deleteBefore(before: string): number {
    return this.deleteBeforeStmt.run(before).changes
  }
}
