import type { EndedSession, LoginRecord } from '../contract.js'
import type { Queryable } from './connection.js'
import { mapPgError } from './errors.js'
import { type RetryPolicy, retrying } from './retry.js'

/** The id in `LoginNotices.ended`, as JSON text: the statement puts each identity's there. */
export const NOTICE_ID = '"@identity@"'

/** What a group commit of logins tells other instances (payloads of the change channel). */
export interface LoginNotices {
  channel: string
  /**
   * Sessions were opened (identity pages show whether an identity has one): `record_logins_v4`
   * sends it only when an identity of the batch had no session before, v2 always.
   */
  opened: string
  /** Sessions of one identity were ended by the cap, NOTICE_ID standing for its id. */
  ended: string
}

// The functions of migrations 019 and 015: sessions, audit events and the session cap in one
// statement, from arrays of what varies between logins (v4, which also refuses the logins whose
// identity changed since they were checked) or from JSON rows of every column (v2: no such check,
// for logins the controller does not make).
const RECORD_LOGINS_V4 = `SELECT ended_id, ended_identity_id, refused
  FROM record_logins_v4($1::text[], $2::bytea[], $3::text[], $4::text[], $5::text[],
    $6::timestamptz[], $7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[], $11::text[],
    $12::text[], $13::text[], $14::integer, $15::text, $16::text, $17::text, $18::text)`
const RECORD_LOGINS_V2 = `SELECT ended_id, ended_identity_id, false AS refused
  FROM record_logins_v2($1::json, $2::json, $3::integer, $4::text, $5::text, $6::text, $7::text)`

const SURROGATE = /[\uD800-\uDFFF]/
const LONE_SURROGATE = /\p{Surrogate}/gu

/**
 * Free text with any lone UTF-16 surrogate as U+FFFD, as the driver writes text parameters: JSON
 * text refuses one (an escaped lone surrogate is invalid JSON input to PostgreSQL).
 */
function text<S extends string | null>(value: S): S {
  return value !== null && SURROGATE.test(value)
    ? (value.replace(LONE_SURROGATE, '\uFFFD') as S) // still a string
    : value
}

/** The sessions as the JSON rows the function reads (column names; the hash in base64). */
function sessionRows(logins: LoginRecord[]): string {
  return JSON.stringify(
    logins.map(({ session: s }) => ({
      id: s.id,
      token_hash: s.tokenHash.toString('base64'),
      legacy_token: s.legacyToken,
      identity_id: s.identityId,
      authenticator_id: s.authenticatorId,
      ip_address: text(s.ipAddress),
      created_at: s.createdAt,
      updated_at: s.updatedAt,
      last_activity_at: s.lastActivityAt,
      expires_at: s.expiresAt,
      hard_expires_at: s.hardExpiresAt,
    })),
  )
}

function eventRows(logins: LoginRecord[]): string {
  return JSON.stringify(
    logins.map(({ event: e }) => ({
      id: e.id,
      at: e.at,
      actor_id: e.actor?.id ?? null,
      actor_name: text(e.actor?.name ?? null),
      action: e.action,
      entity_type: e.entityType,
      entity_id: e.entityId,
      request_id: text(e.requestId),
      method: e.method,
      changed_fields: e.changedFields,
    })),
  )
}

/**
 * Whether a login has the shape `record_logins_v4` derives (every login `SessionService.open`
 * makes): one time for the session's creation, update and last activity and for its event, the
 * event the identity's `login` of the session, and no legacy token.
 */
function derivable({ session: s, event: e }: LoginRecord): boolean {
  return (
    !s.legacyToken &&
    s.updatedAt === s.createdAt &&
    s.lastActivityAt === s.createdAt &&
    e.at === s.createdAt &&
    e.actor?.id === s.identityId &&
    e.action === 'login' &&
    e.entityType === 'api-sessions' &&
    e.entityId === s.id &&
    e.changedFields.length === 0
  )
}

/** The parameters of `record_logins_v4` before the cap's: one array a column, in login order. */
function columns(logins: LoginRecord[]): unknown[] {
  const sessions = logins.map((l) => l.session)
  const events = logins.map((l) => l.event)
  return [
    sessions.map((s) => s.id),
    sessions.map((s) => s.tokenHash),
    sessions.map((s) => s.identityId),
    sessions.map((s) => s.authenticatorId),
    sessions.map((s) => s.ipAddress),
    sessions.map((s) => s.createdAt),
    sessions.map((s) => s.expiresAt),
    sessions.map((s) => s.hardExpiresAt),
    events.map((e) => e.id),
    events.map((e) => e.actor?.name ?? null),
    events.map((e) => e.requestId),
    events.map((e) => e.method),
    logins.map((l) => l.passwordHash ?? null),
  ]
}

/**
 * Stores a group commit of logins in one statement, its own transaction (see the contract's
 * `recordLogins` and migrations 012, 015, 016 and 019): one round trip on a pooled connection.
 */
export async function recordLogins(
  db: Queryable,
  logins: LoginRecord[],
  keep: number | undefined,
  notices: LoginNotices,
  /** When the statement runs again (the store's; none by default). */
  retry: RetryPolicy = { budgetMs: 0 },
): Promise<EndedSession[]> {
  if (logins.length === 0) return []
  try {
    const tail = [keep ?? null, notices.channel, notices.opened, notices.ended, NOTICE_ID]
    // One statement, its own transaction: run again whole if the server rolled it back for a
    // deadlock (a deletion of an older release locking sessions in another order, say).
    const res = await retrying(retry, () =>
      db.query(
        logins.every(derivable)
          ? {
              name: 'record-logins-v4',
              text: RECORD_LOGINS_V4,
              values: [...columns(logins), ...tail],
            }
          : {
              name: 'record-logins-v2',
              text: RECORD_LOGINS_V2,
              values: [sessionRows(logins), eventRows(logins), ...tail],
            },
      ),
    )
    // The function's result columns
    return (res.rows as { ended_id: string; ended_identity_id: string; refused: boolean }[]).map(
      (r): EndedSession =>
        r.refused
          ? { id: r.ended_id, identityId: r.ended_identity_id, refused: true }
          : { id: r.ended_id, identityId: r.ended_identity_id },
    )
  } catch (err) {
    throw mapPgError(err)
  }
}
