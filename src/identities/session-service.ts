import { hash as digest, timingSafeEqual } from 'node:crypto'
import { type AuditContext, AuditService } from '../audit/audit-service.js'
import { AppError } from '../errors.js'
import { newId, newSecret } from '../ids.js'
import { BatchWriter, type BatchWriterStats } from '../store/batch-writer.js'
import {
  type IdentityRecord,
  type LoginRecord,
  SESSIONS_CHANGED,
  type SessionRecord,
  type Store,
} from '../store/contract.js'

export type { SessionRecord }

/** A live session with the identity it belongs to. */
export interface ResolvedSession {
  session: SessionRecord
  identity: IdentityRecord
}

export interface SessionServiceOptions {
  store: Store
  /** The identity of a session (cached by the caller where it can be). */
  identity: (id: string) => Promise<IdentityRecord | undefined>
  /** The identity of a session when known without a read (see `keptSession`); default: never. */
  keptIdentity?: ((id: string) => IdentityRecord | undefined) | undefined
  clock: () => Date
  timeoutMs: number
  /** Records logins and logouts (default: stored but not logged, for unit tests). */
  audit?: AuditService | undefined
  /**
   * Keep live sessions in memory (default: yes). A session another instance ends is forgotten
   * when its notification arrives (see `forgetSession`), and nothing kept is used while the
   * store's notifications may be missed.
   */
  keepSessions?: boolean
  /** Live sessions an identity keeps at most; a login beyond ends its oldest (default: no cap). */
  maxPerIdentity?: number | undefined
  /** Told, once committed, that a session was opened or ended (pages showing hasApiSession). */
  onChange?: (() => void) | undefined
}

/** The login method an authenticator stands for, as audit events name it. */
function loginMethod(authenticatorId: string): string {
  return authenticatorId === 'updb' ? 'password' : 'ext-jwt'
}

// Sliding expiry is written at most this often per session, so busy clients do not write per call.
const TOUCH_INTERVAL_MS = 1000
// Sessions kept in memory at most; the oldest kept is forgotten first (it is read again if used).
const MAX_KEPT_SESSIONS = 10_000

export function hashToken(token: string): Buffer {
  return digest('sha256', token, 'buffer')
}

/** The same hash as base64 text: the key of a kept session (no Buffer made on a hit). */
function tokenKey(token: string): string {
  return digest('sha256', token, 'base64')
}

/** API sessions: random bearer tokens, stored only as hashes, expiring after idle time. */
export class SessionService {
  private readonly writer: BatchWriter<LoginRecord>
  private readonly audit: AuditService
  /** Live sessions by token hash (base64), and each kept session's key by session id. */
  private readonly kept: Map<string, SessionRecord> | undefined
  private readonly keptKeys = new Map<string, string>()
  /** Moves on whenever a session may have ended: a session read before then is not kept. */
  private generation = 0

  constructor(private readonly options: SessionServiceOptions) {
    this.audit = options.audit ?? AuditService.unlogged(options.store, options.clock)
    this.kept = options.keepSessions === false ? undefined : new Map()
    // Changes may have been missed, or the caches are to be reread: nothing kept is trusted.
    options.store.onFeed((event) => {
      if (event.type !== 'change') this.forgetAll()
    })
    // A login's audit event commits with its session, and so does the end of the sessions it
    // pushes past the cap (PostgreSQL: one statement for the whole batch).
    const max = options.maxPerIdentity
    this.writer = new BatchWriter(
      async (batch) => {
        let ended: Awaited<ReturnType<typeof options.store.recordLogins>>
        try {
          ended = await options.store.recordLogins(batch, max)
        } catch (err) {
          // Perhaps stored all the same (the answer lost after the commit): the cap may have ended
          // sessions this instance keeps, so its identities' are read again.
          for (const id of new Set(batch.map((login) => login.session.identityId))) {
            this.forgetIdentity(id)
          }
          throw err
        }
        let refused: Map<LoginRecord, AppError> | undefined
        for (const session of ended) {
          this.forget(session.id)
          if (!session.refused) continue
          // Its identity was disabled or deleted, or its password changed, since the login's
          // check: the login fails as a refused password or JWT does.
          refused ??= new Map()
          const login = batch.find((l) => l.session.id === session.id)
          if (login) refused.set(login, new AppError('INVALID_AUTH'))
        }
        return refused
      },
      { concurrency: options.store.loginBatchesAtOnce },
    )
  }

  /** The logins' group commits so far (metrics): units of work, logins committed, seconds busy. */
  get commitStats(): BatchWriterStats {
    return this.writer.stats
  }

  /** Commits every login still waiting for its group commit (before the store closes). */
  drain(): Promise<void> {
    return this.writer.drain()
  }

  /**
   * Opens a session for an identity; resolves, once it is stored, with the record and the token
   * (shown once). Logins arriving together share one commit. The audit event's actor is the
   * identity that logged in.
   */
  async open(
    identity: IdentityRecord,
    authenticatorId: string,
    ipAddress: string,
    ctx?: AuditContext,
    /** The latest the session may last (the JWT's expiry, for `sessionEndsWithToken`). */
    endsAt?: Date,
    /**
     * A password login's: the hash its password matched. The session is stored only while it is
     * still the identity's, and only while the identity is there and enabled (any login); else
     * this rejects with 401 INVALID_AUTH (see the store's `recordLogins`).
     */
    passwordHash?: string,
  ): Promise<{ session: SessionRecord; token: string }> {
    const id = newId()
    // The token names its session: it is found by id (in creation order, as it is stored), and the
    // hash of the whole token must then match.
    const token = `${id}.${newSecret()}`
    const now = this.options.clock()
    const created = now.toISOString()
    const hardExpiresAt = endsAt?.toISOString() ?? null
    const session: SessionRecord = {
      id,
      tokenHash: hashToken(token),
      legacyToken: false,
      identityId: identity.id,
      authenticatorId,
      ipAddress,
      createdAt: created,
      updatedAt: created,
      lastActivityAt: created,
      expiresAt: this.expiry(now, hardExpiresAt),
      hardExpiresAt,
    }
    const event = this.audit.event(
      { actor: { id: identity.id, name: identity.name }, requestId: ctx?.requestId ?? null },
      {
        action: 'login',
        entityType: 'api-sessions',
        entityId: session.id,
        method: loginMethod(authenticatorId),
      },
      now, // the session's creation
    )
    await this.writer.add(
      passwordHash === undefined ? { session, event } : { session, event, passwordHash },
    )
    this.options.onChange?.()
    // The login's one log line (the access log has the request's): who, how, which session.
    this.audit.logged(event, { authenticatorId })
    return { session, token }
  }

  /**
   * Finds the live session of a token and slides its expiry. Resolves undefined for an unknown,
   * expired or ended session, or one whose identity is disabled.
   */
  async resolve(token: string): Promise<ResolvedSession | undefined> {
    const sessions = this.options.store.repos.sessions
    const kept = this.options.store.stale ? undefined : this.kept
    const key = kept ? tokenKey(token) : ''
    const generation = this.generation
    const now = this.options.clock()
    let session = kept?.get(key)
    if (session && Date.parse(session.expiresAt) <= now.getTime()) {
      // Another instance may have slid its expiry since it was kept: the store decides.
      this.forget(session.id)
      session = undefined
    }
    session ??= await this.find(token, kept ? Buffer.from(key, 'base64') : hashToken(token))
    if (!session) return undefined
    if (Date.parse(session.expiresAt) <= now.getTime()) {
      this.forget(session.id)
      if (await this.deleteExpired(session.id)) this.options.onChange?.()
      return undefined
    }
    const identity = await this.options.identity(session.identityId)
    if (!identity || identity.disabled) return undefined
    if (now.getTime() - Date.parse(session.lastActivityAt) >= TOUCH_INTERVAL_MS) {
      const lastActivityAt = now.toISOString()
      const expiresAt = this.expiry(now, session.hardExpiresAt)
      let touched: boolean
      try {
        touched = await sessions.touch(session.id, lastActivityAt, expiresAt)
      } catch (err) {
        this.forget(session.id) // what is kept must never be ahead of what is stored
        throw err
      }
      if (!touched) {
        // Ended meanwhile where no notification names it (another instance's purge of expired
        // sessions), or expired in the store: sliding the kept copy would revive it here only.
        this.forget(session.id)
        return undefined
      }
      session.lastActivityAt = lastActivityAt
      session.expiresAt = expiresAt
    }
    if (kept && generation === this.generation) this.keep(key, session)
    return { session, identity }
  }

  /**
   * What `resolve` would resolve a token to, when it is all known in memory and needs no read and
   * no write: a kept live session, its identity kept and enabled, and no sliding expiry due.
   * Undefined whenever anything is unknown (then only `resolve` can decide: it may refuse).
   */
  keptSession(token: string): ResolvedSession | undefined {
    if (!this.kept || this.options.store.stale) return undefined
    const session = this.kept.get(tokenKey(token))
    if (!session) return undefined
    const now = this.options.clock().getTime()
    if (Date.parse(session.expiresAt) <= now) return undefined
    if (now - Date.parse(session.lastActivityAt) >= TOUCH_INTERVAL_MS) return undefined
    const identity = this.options.keptIdentity?.(session.identityId)
    if (!identity || identity.disabled) return undefined
    return { session, identity }
  }

  /** Idle timeout from now, but never past a session's hard end. */
  private expiry(now: Date, hardExpiresAt: string | null): string {
    const sliding = now.getTime() + this.options.timeoutMs
    if (hardExpiresAt === null) return new Date(sliding).toISOString()
    return new Date(Math.min(sliding, Date.parse(hardExpiresAt))).toISOString()
  }

  /**
   * The stored session of a token: the one its id part names, if the whole token's hash matches;
   * a token without an id part (made before tokens named their session) by its hash alone.
   */
  private async find(token: string, hash: Buffer): Promise<SessionRecord | undefined> {
    const sessions = this.options.store.repos.sessions
    const dot = token.indexOf('.')
    if (dot === -1) return sessions.getLegacyByTokenHash(hash)
    const session = await sessions.get(token.slice(0, dot))
    if (!session || session.legacyToken || session.tokenHash.length !== hash.length)
      return undefined
    return timingSafeEqual(session.tokenHash, hash) ? session : undefined
  }

  private keep(key: string, session: SessionRecord): void {
    if (!this.kept || this.kept.has(key)) return
    if (this.kept.size >= MAX_KEPT_SESSIONS) {
      const [oldestKey, oldest] = this.kept.entries().next().value as [string, SessionRecord]
      this.kept.delete(oldestKey)
      this.keptKeys.delete(oldest.id)
    }
    this.kept.set(key, session)
    this.keptKeys.set(session.id, key)
  }

  /** Another instance ended this session: it is read again if presented (and then refused). */
  forgetSession(sessionId: string): void {
    this.forget(sessionId)
  }

  private forgetAll(): void {
    this.generation++
    this.kept?.clear()
    this.keptKeys.clear()
  }

  private forget(sessionId: string): void {
    this.generation++
    const key = this.keptKeys.get(sessionId)
    if (key === undefined) return
    this.keptKeys.delete(sessionId)
    this.kept?.delete(key)
  }

  /**
   * An identity changed or was deleted: its kept sessions are read again (disabling or deleting
   * an identity ends its sessions in the store).
   */
  forgetIdentity(identityId: string): void {
    if (!this.kept) return
    this.generation++
    for (const [key, session] of this.kept) {
      if (session.identityId === identityId) {
        this.kept.delete(key)
        this.keptKeys.delete(session.id)
      }
    }
  }

  /** Deletes a session found expired, telling other instances if it was still stored. */
  private deleteExpired(sessionId: string): Promise<boolean> {
    return this.options.store.transaction(async (tx) => {
      const deleted = await tx.sessions.delete(sessionId)
      if (deleted) await tx.publish({ entity: 'session', op: 'delete', id: sessionId })
      return deleted
    })
  }

  /** Logout: ends a session (recording who ended it). */
  async end(sessionId: string, ctx?: AuditContext): Promise<void> {
    const event = await this.options.store.transaction(async (tx) => {
      if (!(await tx.sessions.delete(sessionId))) return undefined
      await tx.publish({ entity: 'session', op: 'delete', id: sessionId })
      const entry = { action: 'logout', entityType: 'api-sessions', entityId: sessionId } as const
      return this.audit.record(tx, ctx, entry)
    })
    this.forget(sessionId)
    if (event) this.options.onChange?.()
    if (event) this.audit.logged(event)
  }

  /** Removes sessions past their expiry; resolves with how many. */
  async purgeExpired(): Promise<number> {
    const now = this.options.clock()
    const purged = await this.options.store.transaction(async (tx) => {
      const n = await tx.sessions.deleteExpired(now.toISOString())
      if (n > 0) await tx.publish(SESSIONS_CHANGED)
      return n
    })
    for (const session of this.kept?.values() ?? []) {
      if (Date.parse(session.expiresAt) < now.getTime()) this.forget(session.id)
    }
    if (purged > 0) this.options.onChange?.()
    return purged
  }

  private asked = new Map<string, ((has: boolean) => void)[]>()
  private failed: ((err: unknown) => void)[] = []

  /**
   * Whether an identity has a session. The questions asked in one turn of the event loop (a page
   * of identity details) are answered by one query.
   */
  hasSession(identityId: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      if (this.asked.size === 0) setImmediate(() => void this.answer())
      this.asked.set(identityId, [...(this.asked.get(identityId) ?? []), resolve])
      this.failed.push(reject)
    })
  }

  private async answer(): Promise<void> {
    const asked = this.asked
    const failed = this.failed
    this.asked = new Map()
    this.failed = []
    try {
      const found = new Set(
        await this.options.store.repos.sessions.identitiesWithSessions([...asked.keys()]),
      )
      for (const [id, waiting] of asked) for (const resolve of waiting) resolve(found.has(id))
    } catch (err) {
      for (const reject of failed) reject(err)
    }
  }

  /** Seconds until the session expires, at least 0. */
  expirationSeconds(session: SessionRecord): number {
    const ms = Date.parse(session.expiresAt) - this.options.clock().getTime()
    return Math.max(0, Math.round(ms / 1000))
  }
}
