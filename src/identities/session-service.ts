import { createHash, randomBytes } from 'node:crypto'
import { newId } from '../ids.js'
import { BatchWriter } from '../store/batch-writer.js'
import type { IdentityRecord, SessionRecord, Store } from '../store/types.js'

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
  clock: () => Date
  timeoutMs: number
}

// Sliding expiry is written at most this often per session, so busy clients do not write per call.
const TOUCH_INTERVAL_MS = 1000

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/** API sessions: random bearer tokens, stored only as hashes, expiring after idle time. */
export class SessionService {
  private readonly writer: BatchWriter<SessionRecord>

  constructor(private readonly options: SessionServiceOptions) {
    this.writer = new BatchWriter(options.store, (tx, batch) => tx.sessions.insertMany(batch))
  }

  /**
   * Opens a session for an identity; resolves, once it is stored, with the record and the token
   * (shown once). Logins arriving together share one commit.
   */
  async open(
    identity: IdentityRecord,
    authenticatorId: string,
    ipAddress: string,
  ): Promise<{ session: SessionRecord; token: string }> {
    const token = randomBytes(32).toString('base64url')
    const now = this.options.clock()
    const session: SessionRecord = {
      id: newId(),
      tokenHash: hashToken(token),
      identityId: identity.id,
      authenticatorId,
      ipAddress,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      lastActivityAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + this.options.timeoutMs).toISOString(),
    }
    await this.writer.add(session)
    return { session, token }
  }

  /**
   * Finds the live session of a token and slides its expiry. Resolves undefined for an unknown,
   * expired or ended session, or one whose identity is disabled.
   */
  async resolve(token: string): Promise<ResolvedSession | undefined> {
    const sessions = this.options.store.repos.sessions
    const session = await sessions.getByTokenHash(hashToken(token))
    if (!session) return undefined
    const now = this.options.clock()
    if (Date.parse(session.expiresAt) <= now.getTime()) {
      await sessions.delete(session.id)
      return undefined
    }
    const identity = await this.options.identity(session.identityId)
    if (!identity || identity.disabled) return undefined
    if (now.getTime() - Date.parse(session.lastActivityAt) >= TOUCH_INTERVAL_MS) {
      session.lastActivityAt = now.toISOString()
      session.expiresAt = new Date(now.getTime() + this.options.timeoutMs).toISOString()
      await sessions.touch(session.id, session.lastActivityAt, session.expiresAt)
    }
    return { session, identity }
  }

  async end(sessionId: string): Promise<void> {
    await this.options.store.repos.sessions.delete(sessionId)
  }

  /** Removes sessions past their expiry; resolves with how many. */
  purgeExpired(): Promise<number> {
    return this.options.store.repos.sessions.deleteExpired(this.options.clock().toISOString())
  }

  async hasSession(identityId: string): Promise<boolean> {
    return (await this.options.store.repos.sessions.countForIdentity(identityId)) > 0
  }

  /** Seconds until the session expires, at least 0. */
  expirationSeconds(session: SessionRecord): number {
    const ms = Date.parse(session.expiresAt) - this.options.clock().getTime()
    return Math.max(0, Math.round(ms / 1000))
  }
}
