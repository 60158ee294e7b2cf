import type { ControllerRecord } from '../contract.js'
import type { ListPage, ListQuery, ListSpec } from '../query/list-query.js'
import type { Db } from './connection.js'
import { ListRunner } from './list-runner.js'

export type { ControllerRecord }

interface ControllerRow {
  id: string
  name: string
  advertise_url: string
  cert_pem: string
  fingerprint: string
  heartbeat_ms: number
  last_joined_at: string
  last_heartbeat_at: string
  created_at: string
  updated_at: string
}

function toRecord(r: ControllerRow): ControllerRecord {
  return {
    id: r.id,
    name: r.name,
    advertiseUrl: r.advertise_url,
    certPem: r.cert_pem,
    fingerprint: r.fingerprint,
    heartbeatMs: r.heartbeat_ms,
    lastJoinedAt: r.last_joined_at,
    lastHeartbeatAt: r.last_heartbeat_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

/** Filters and sorts of the controllers list (the same columns on both stores). */
export const CONTROLLER_LIST_SPEC: ListSpec = {
  filterable: {
    id: { column: 'id', type: 'string' },
    name: { column: 'name', type: 'string' },
    fingerprint: { column: 'fingerprint', type: 'string' },
    lastJoinedAt: { column: 'last_joined_at', type: 'datetime' },
    createdAt: { column: 'created_at', type: 'datetime' },
    updatedAt: { column: 'updated_at', type: 'datetime' },
  },
  sortable: {
    name: 'name',
    lastJoinedAt: 'last_joined_at',
    createdAt: 'created_at',
    updatedAt: 'updated_at',
  },
  idColumn: 'id',
}

/** Persistence of the controllers list. */
export class ControllerRepository {
  private readonly upsertStmt
  private readonly heartbeatStmt
  private readonly deleteStmt
  private readonly lists: ListRunner<ControllerRow, ControllerRecord>

  constructor(db: Db) {
    this.upsertStmt = db.prepare<ControllerRow>(
      `INSERT INTO controllers (id, name, advertise_url, cert_pem, fingerprint, heartbeat_ms,
         last_joined_at, last_heartbeat_at, created_at, updated_at)
       VALUES (@id, @name, @advertise_url, @cert_pem, @fingerprint, @heartbeat_ms,
         @last_joined_at, @last_heartbeat_at, @created_at, @updated_at)
       ON CONFLICT (name) DO UPDATE SET advertise_url = excluded.advertise_url,
         cert_pem = excluded.cert_pem, fingerprint = excluded.fingerprint,
         heartbeat_ms = excluded.heartbeat_ms, last_joined_at = excluded.last_joined_at,
         last_heartbeat_at = excluded.last_heartbeat_at, updated_at = excluded.updated_at
       RETURNING *`,
    )
    this.heartbeatStmt = db.prepare<[string, string]>(
      'UPDATE controllers SET last_heartbeat_at = ? WHERE id = ?',
    )
    this.deleteStmt = db.prepare<[string]>('DELETE FROM controllers WHERE id = ?')
    this.lists = new ListRunner(db, 'controllers', toRecord)
  }

  upsert(c: ControllerRecord): ControllerRecord {
    const row = this.upsertStmt.get({
      id: c.id,
      name: c.name,
      advertise_url: c.advertiseUrl,
      cert_pem: c.certPem,
      fingerprint: c.fingerprint,
      heartbeat_ms: c.heartbeatMs,
      last_joined_at: c.lastJoinedAt,
      last_heartbeat_at: c.lastHeartbeatAt,
      created_at: c.createdAt,
      updated_at: c.updatedAt,
    }) as ControllerRow // RETURNING always yields the written row
    return toRecord(row)
  }

  heartbeat(id: string, at: string): boolean {
    return this.heartbeatStmt.run(at, id).changes > 0
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0
  }

  list(query: ListQuery): ListPage<ControllerRecord> {
    return this.lists.run(query)
  }
}
