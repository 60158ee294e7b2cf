import type { SessionRecord, SessionRepository } from '../contract.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'

interface SessionRow {
  id: string
  token_hash: Buffer
  legacy_token: boolean
  identity_id: string
  authenticator_id: string
  ip_address: string
  created_at: Date
  updated_at: Date
  last_activity_at: Date
  expires_at: Date
  hard_expires_at: Date | null
}

function toRecord(r: SessionRow): SessionRecord {
  return {
    id: r.id,
    tokenHash: r.token_hash,
    legacyToken: r.legacy_token,
    identityId: r.identity_id,
    authenticatorId: r.authenticator_id,
    ipAddress: r.ip_address,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    lastActivityAt: iso(r.last_activity_at),
    expiresAt: iso(r.expires_at),
    hardExpiresAt: r.hard_expires_at === null ? null : iso(r.hard_expires_at),
  }
}

/** Every column this release reads, named: as the signers' (a later release may add one). */
const COLUMNS = `id, token_hash, legacy_token, identity_id, authenticator_id, ip_address, created_at,
  updated_at, last_activity_at, expires_at, hard_expires_at`

const INSERT_MANY = `INSERT INTO api_sessions (${COLUMNS})
  SELECT * FROM unnest($1::text[], $2::bytea[], $3::boolean[], $4::text[], $5::text[], $6::text[],
    $7::timestamptz[], $8::timestamptz[], $9::timestamptz[], $10::timestamptz[], $11::timestamptz[])`
/** Persistence of API sessions on PostgreSQL. */
export class PgSessionRepository implements SessionRepository {
  constructor(private readonly db: Queryable) {}

  private async run(text: string, values: unknown[], name?: string) {
    try {
      return await this.db.query(name ? { name, text, values } : { text, values })
    } catch (err) {
      throw mapPgError(err)
    }
  }

  /**
   * One INSERT of every session given (copying a store), its rows as arrays: the statement's text
   * is the same whatever the count, so it is parsed and planned once per connection.
   */
  async insertMany(sessions: SessionRecord[]): Promise<void> {
    if (sessions.length === 0) return
    await this.run(
      INSERT_MANY,
      [
        sessions.map((s) => s.id),
        sessions.map((s) => s.tokenHash),
        sessions.map((s) => s.legacyToken),
        sessions.map((s) => s.identityId),
        sessions.map((s) => s.authenticatorId),
        sessions.map((s) => s.ipAddress),
        sessions.map((s) => s.createdAt),
        sessions.map((s) => s.updatedAt),
        sessions.map((s) => s.lastActivityAt),
        sessions.map((s) => s.expiresAt),
        sessions.map((s) => s.hardExpiresAt),
      ],
      'sessions-insert-many',
    )
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const sql = `SELECT ${COLUMNS} FROM api_sessions WHERE id = $1`
    const row = (await this.run(sql, [id], 'session-by-id')).rows[0] as SessionRow | undefined // api_sessions columns
    return row ? toRecord(row) : undefined
  }

  async getLegacyByTokenHash(hash: Buffer): Promise<SessionRecord | undefined> {
    const sql = `SELECT ${COLUMNS} FROM api_sessions WHERE token_hash = $1 AND legacy_token`
    const row = (await this.run(sql, [hash], 'session-by-legacy-hash')).rows[0] as
      | SessionRow
      | undefined // api_sessions columns
    return row ? toRecord(row) : undefined
  }

  async touch(id: string, lastActivityAt: string, expiresAt: string): Promise<boolean> {
    const sql =
      'UPDATE api_sessions SET last_activity_at = $1, expires_at = $2 WHERE id = $3 AND expires_at > $1'
    const res = await this.run(sql, [lastActivityAt, expiresAt, id], 'session-touch')
    return (res.rowCount ?? 0) > 0
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.run('DELETE FROM api_sessions WHERE id = $1', [id])).rowCount ?? 0) > 0
  }

  // An identity's sessions are locked oldest first, the order in which a login batch holds the
  // oldest of them (migration 016): a deletion then waits holding none that the batch's cap
  // trim could wait for.
  async deleteForIdentity(identityId: string): Promise<number> {
    const sql = `DELETE FROM api_sessions WHERE id IN (SELECT id FROM api_sessions
      WHERE identity_id = $1 ORDER BY created_at, id FOR UPDATE)`
    const res = await this.run(sql, [identityId])
    return res.rowCount ?? 0
  }

  // A session a login batch holds (migration 016) is left for the next sweep: the sweep waits
  // for no one, so it never deadlocks with the batch's cap trim.
  async deleteExpired(before: string): Promise<number> {
    const sql = `DELETE FROM api_sessions WHERE id IN (SELECT id FROM api_sessions
      WHERE expires_at < $1 FOR UPDATE SKIP LOCKED)`
    const res = await this.run(sql, [before])
    return res.rowCount ?? 0
  }

  async countForIdentity(identityId: string): Promise<number> {
    const sql = 'SELECT count(*)::int AS n FROM api_sessions WHERE identity_id = $1'
    return ((await this.run(sql, [identityId])).rows[0] as { n: number }).n // count(*) yields a row
  }

  async deleteForIdentityExcept(identityId: string, keepId: string): Promise<string[]> {
    const sql = `DELETE FROM api_sessions WHERE id IN (SELECT id FROM api_sessions
      WHERE identity_id = $1 AND id <> $2 ORDER BY created_at, id FOR UPDATE) RETURNING id`
    const res = await this.run(sql, [identityId, keepId])
    return (res.rows as { id: string }[]).map((r) => r.id) // RETURNING id
  }

  async all(): Promise<SessionRecord[]> {
    const sql = `SELECT ${COLUMNS} FROM api_sessions`
    return ((await this.run(sql, [])).rows as SessionRow[]).map(toRecord) // api_sessions columns
  }

  async identitiesWithSessions(identityIds: string[]): Promise<string[]> {
    if (identityIds.length === 0) return []
    const sql = 'SELECT DISTINCT identity_id FROM api_sessions WHERE identity_id = ANY($1::text[])'
    const res = await this.run(sql, [identityIds], 'identities-with-sessions')
    return (res.rows as { identity_id: string }[]).map((r) => r.identity_id) // the selected column
  }

  async count(): Promise<number> {
    const res = await this.run('SELECT count(*)::int AS n FROM api_sessions', [])
    return (res.rows[0] as { n: number }).n // count(*) yields a row
  }
}
