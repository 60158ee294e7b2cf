import type { EndedSession, SessionRecord } from '../contract.js'
import type { Db } from './connection.js'

export type { SessionRecord }

interface SessionRow {
  id: string
  token_hash: Buffer
  legacy_token: 0 | 1
  identity_id: string
  authenticator_id: string
  ip_address: string
  created_at: string
  updated_at: string
  last_activity_at: string
  expires_at: string
  hard_expires_at: string | null
}

/** The insert's parameters, in the order of its column list. */
type SessionParams = [
  id: string,
  tokenHash: Buffer,
  legacyToken: 0 | 1,
  identityId: string,
  authenticatorId: string,
  ipAddress: string,
  createdAt: string,
  updatedAt: string,
  lastActivityAt: string,
  expiresAt: string,
  hardExpiresAt: string | null,
]

function toRecord(r: SessionRow): SessionRecord {
  return {
    id: r.id,
    tokenHash: r.token_hash,
    legacyToken: r.legacy_token === 1,
    identityId: r.identity_id,
    authenticatorId: r.authenticator_id,
    ipAddress: r.ip_address,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastActivityAt: r.last_activity_at,
    expiresAt: r.expires_at,
    hardExpiresAt: r.hard_expires_at,
  }
}

/** Persistence of API sessions. */
export class SessionRepository {
  private readonly insertStmt
  private readonly byIdStmt
  private readonly legacyByHashStmt
  private readonly touchStmt
  private readonly deleteStmt
  private readonly deleteForIdentityStmt
  private readonly deleteExpiredStmt
  private readonly countForIdentityStmt
  private readonly countStmt
  private readonly withSessionsStmt
  private readonly allStmt
  private readonly overCapStmt
  private readonly exceptStmt

  constructor(db: Db) {
    this.withSessionsStmt = db.prepare<[string], { identity_id: string }>(
      `SELECT DISTINCT identity_id FROM api_sessions
       WHERE identity_id IN (SELECT value FROM json_each(?))`,
    )
    // Positional parameters: binding from an object looks each name up, about a microsecond more
    // for these eleven on every login. The order is the column list's.
    this.insertStmt = db.prepare<SessionParams>(
      `INSERT INTO api_sessions (id, token_hash, legacy_token, identity_id, authenticator_id,
         ip_address, created_at, updated_at, last_activity_at, expires_at, hard_expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    this.byIdStmt = db.prepare<[string], SessionRow>('SELECT * FROM api_sessions WHERE id = ?')
    this.legacyByHashStmt = db.prepare<[Buffer], SessionRow>(
      'SELECT * FROM api_sessions WHERE token_hash = ? AND legacy_token = 1',
    )
    this.touchStmt = db.prepare<[string, string, string, string]>(
      'UPDATE api_sessions SET last_activity_at = ?, expires_at = ? WHERE id = ? AND expires_at > ?',
    )
    this.deleteStmt = db.prepare<[string]>('DELETE FROM api_sessions WHERE id = ?')
    this.deleteForIdentityStmt = db.prepare<[string]>(
      'DELETE FROM api_sessions WHERE identity_id = ?',
    )
    this.deleteExpiredStmt = db.prepare<[string]>('DELETE FROM api_sessions WHERE expires_at < ?')
    this.allStmt = db.prepare<[], SessionRow>('SELECT * FROM api_sessions')
    // The sessions past the cap are read first and deleted by id: a DELETE whose WHERE holds
    // this subquery costs 30-60 µs even when it finds nothing (a login's usual case), this
    // read about 4 µs.
    this.overCapStmt = db.prepare<[string, number], { id: string }>(
      `SELECT id FROM api_sessions WHERE identity_id = ?
       ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?`,
    )
    this.exceptStmt = db.prepare<[string, string], { id: string }>(
      'DELETE FROM api_sessions WHERE identity_id = ? AND id <> ? RETURNING id',
    )
    this.countStmt = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM api_sessions')
    this.countForIdentityStmt = db.prepare<[string], { n: number }>(
      'SELECT count(*) AS n FROM api_sessions WHERE identity_id = ?',
    )
  }

  /**
   * Ends each identity's sessions beyond its `keep` newest; call inside a transaction (the store's
   * group commit of logins), where the reads and the deletes are one unit.
   */
  trimForIdentities(identityIds: string[], keep: number): EndedSession[] {
    const ended: EndedSession[] = []
    for (const identityId of identityIds) {
      for (const { id } of this.overCapStmt.all(identityId, keep)) {
        this.deleteStmt.run(id)
        ended.push({ id, identityId })
      }
    }
    return ended
  }

  deleteForIdentityExcept(identityId: string, keepId: string): string[] {
    return this.exceptStmt.all(identityId, keepId).map((r) => r.id)
  }

  /** Call inside a transaction: the sessions of one group commit. */
  insertMany(sessions: SessionRecord[]): void {
    for (const s of sessions) this.insert(s)
  }

  insert(s: SessionRecord): void {
    this.insertStmt.run(
      s.id,
      s.tokenHash,
      s.legacyToken ? 1 : 0,
      s.identityId,
      s.authenticatorId,
      s.ipAddress,
      s.createdAt,
      s.updatedAt,
      s.lastActivityAt,
      s.expiresAt,
      s.hardExpiresAt,
    )
  }

  get(id: string): SessionRecord | undefined {
    const row = this.byIdStmt.get(id)
    return row ? toRecord(row) : undefined
  }

  getLegacyByTokenHash(hash: Buffer): SessionRecord | undefined {
    const row = this.legacyByHashStmt.get(hash)
    return row ? toRecord(row) : undefined
  }

  touch(id: string, lastActivityAt: string, expiresAt: string): boolean {
    return this.touchStmt.run(lastActivityAt, expiresAt, id, lastActivityAt).changes > 0
  }

  delete(id: string): boolean {
    return this.deleteStmt.run(id).changes > 0
  }

  deleteForIdentity(identityId: string): number {
    return this.deleteForIdentityStmt.run(identityId).changes
  }

  deleteExpired(before: string): number {
    return this.deleteExpiredStmt.run(before).changes
  }

  all(): SessionRecord[] {
    return this.allStmt.all().map(toRecord)
  }

  identitiesWithSessions(identityIds: string[]): string[] {
    if (identityIds.length === 0) return []
    return this.withSessionsStmt.all(JSON.stringify(identityIds)).map((r) => r.identity_id)
  }

  count(): number {
    return (this.countStmt.get() as { n: number }).n // count(*) yields a row
  }

  countForIdentity(identityId: string): number {
    return (this.countForIdentityStmt.get(identityId) as { n: number }).n // count(*) yields a row
  }
}
