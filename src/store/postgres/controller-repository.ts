import type { ControllerRecord, ControllerRepository } from '../contract.js'
import type { ListPage, ListQuery } from '../query/list-query.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'
import { PgListRunner } from './list-runner.js'

interface ControllerRow {
  id: string
  name: string
  advertise_url: string
  cert_pem: string
  fingerprint: string
  heartbeat_ms: number
  last_joined_at: Date
  last_heartbeat_at: Date
  created_at: Date
  updated_at: Date
}

function toRecord(r: ControllerRow): ControllerRecord {
  return {
    id: r.id,
    name: r.name,
    advertiseUrl: r.advertise_url,
    certPem: r.cert_pem,
    fingerprint: r.fingerprint,
    heartbeatMs: r.heartbeat_ms,
    lastJoinedAt: iso(r.last_joined_at),
    lastHeartbeatAt: iso(r.last_heartbeat_at),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }
}

/** Persistence of the controllers list on PostgreSQL, shared by every instance. */
export class PgControllerRepository implements ControllerRepository {
  private static readonly lists = new PgListRunner<ControllerRow, ControllerRecord>(
    'controllers',
    toRecord,
  )

  constructor(private readonly db: Queryable) {}

  async upsert(c: ControllerRecord): Promise<ControllerRecord> {
    try {
      const { rows } = await this.db.query(
        `INSERT INTO controllers (id, name, advertise_url, cert_pem, fingerprint, heartbeat_ms,
           last_joined_at, last_heartbeat_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (name) DO UPDATE SET advertise_url = excluded.advertise_url,
           cert_pem = excluded.cert_pem, fingerprint = excluded.fingerprint,
           heartbeat_ms = excluded.heartbeat_ms, last_joined_at = excluded.last_joined_at,
           last_heartbeat_at = excluded.last_heartbeat_at, updated_at = excluded.updated_at
         RETURNING *`,
        [
          c.id,
          c.name,
          c.advertiseUrl,
          c.certPem,
          c.fingerprint,
          c.heartbeatMs,
          c.lastJoinedAt,
          c.lastHeartbeatAt,
          c.createdAt,
          c.updatedAt,
        ],
      )
      return toRecord(rows[0] as ControllerRow) // RETURNING always yields the written row
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async heartbeat(id: string, at: string): Promise<boolean> {
    try {
      const res = await this.db.query(
        'UPDATE controllers SET last_heartbeat_at = $1 WHERE id = $2',
        [at, id],
      )
      return (res.rowCount ?? 0) > 0
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async delete(id: string): Promise<boolean> {
    try {
      return (
        ((await this.db.query('DELETE FROM controllers WHERE id = $1', [id])).rowCount ?? 0) > 0
      )
    } catch (err) {
      throw mapPgError(err)
    }
  }

  list(query: ListQuery): Promise<ListPage<ControllerRecord>> {
    return PgControllerRepository.lists.run(this.db, query)
  }
}
