import { resolve } from 'node:path'
import type {
  EndedSession,
  FeedEvent,
  IntegrityFacts,
  LoginRecord,
  Repositories,
  Store,
  UnitOfWork,
} from '../contract.js'
import { AuditRepository } from './audit-repository.js'
import { AuthPolicyRepository } from './auth-policy-repository.js'
import { backupTo, integrityFacts, storageProblems } from './backup.js'
import type { Db } from './connection.js'
import { ControllerRepository } from './controller-repository.js'
import { IdentityRepository } from './identity-repository.js'
import { LoginFailureRepository } from './login-failure-repository.js'
import { Mutex, now } from './mutex.js'
import { SessionRepository } from './session-repository.js'
import { SignerRepository } from './signer-repository.js'
import { type SyncFile, WalSync } from './wal-sync.js'

/** The synchronous shape of an async repository interface, as better-sqlite3 implements it. */
export type Sync<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never
}

type Runner = <R>(fn: () => R) => Promise<R>

/** The async face of a synchronous repository: each call goes through `run`. */
function facade<T extends object>(repo: Sync<T>, run: Runner): T {
  const out: Record<string, unknown> = {}
  const proto = Object.getPrototypeOf(repo) as object // typed any; a class instance's prototype
  // Read by name below, and called only where the value is a function.
  const methods = repo as Record<string, (...args: unknown[]) => unknown>
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name === 'constructor' || typeof methods[name] !== 'function') continue
    out[name] = (...args: unknown[]) => run(() => methods[name]?.(...args))
  }
  return out as T // every method of Sync<T> wrapped into its Promise-returning twin
}

interface SyncRepositories {
  signers: Sync<Repositories['signers']>
  identities: Sync<Repositories['identities']>
  policies: Sync<Repositories['policies']>
  sessions: Sync<Repositories['sessions']>
  audit: Sync<Repositories['audit']>
  loginFailures: Sync<Repositories['loginFailures']>
  controllers: Sync<Repositories['controllers']>
}

function facades(sync: SyncRepositories, run: Runner): Repositories {
  return {
    signers: facade(sync.signers, run),
    identities: facade(sync.identities, run),
    policies: facade(sync.policies, run),
    sessions: facade(sync.sessions, run),
    audit: facade(sync.audit, run),
    loginFailures: facade(sync.loginFailures, run),
    controllers: facade(sync.controllers, run),
  }
}

/** The embedded store: one better-sqlite3 connection, units of work serialised by a mutex. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite'
  readonly repos: Repositories
  readonly stale = false
  private readonly mutex = new Mutex()
  private readonly inTx: UnitOfWork
  private readonly pingStmt
  private readonly loginBatch
  /** A file database's WAL, synced off the event loop after each login batch (see WalSync). */
  private readonly wal: WalSync | undefined
  private readonly syncNormal
  private readonly syncFull

  constructor(
    readonly db: Db,
    private readonly onClose?: () => void,
    /** How the WAL is synced after a login batch (tests hold or fail it); fdatasync by default. */
    options: { syncFile?: SyncFile } = {},
  ) {
    const sessions = new SessionRepository(db)
    const audit = new AuditRepository(db)
    const sync: SyncRepositories = {
      signers: new SignerRepository(db),
      identities: new IdentityRepository(db),
      policies: new AuthPolicyRepository(db),
      sessions,
      audit,
      loginFailures: new LoginFailureRepository(),
      controllers: new ControllerRepository(db),
    }
    this.repos = facades(sync, (fn) => this.mutex.run(fn))
    // Inside a unit of work the lock is already held: statements run at once.
    this.inTx = { ...facades(sync, now), publish: async () => {} }
    this.pingStmt = db.prepare('SELECT 1')
    // One synchronous transaction (better-sqlite3 keeps its BEGIN and COMMIT prepared).
    this.loginBatch = db.transaction((logins: LoginRecord[], keep?: number): EndedSession[] => {
      sessions.insertMany(logins.map((l) => l.session))
      audit.insertMany(logins.map((l) => l.event))
      if (keep === undefined) return []
      return sessions.trimForIdentities([...new Set(logins.map((l) => l.session.identityId))], keep)
    })
    const wal = !db.memory && db.pragma('journal_mode', { simple: true }) === 'wal'
    this.wal = wal ? new WalSync(`${resolve(db.name)}-wal`, options.syncFile) : undefined
    this.syncNormal = db.prepare('PRAGMA synchronous = NORMAL')
    this.syncFull = db.prepare('PRAGMA synchronous = FULL')
  }

  onFeed(_listener: (event: FeedEvent) => void): void {
    // One process owns the file: there are no other instances to hear from.
  }

  async transaction<T>(work: (tx: UnitOfWork) => Promise<T>): Promise<T> {
    await this.mutex.lock()
    try {
      this.db.exec('BEGIN IMMEDIATE')
      try {
        const result = await work(this.inTx)
        this.db.exec('COMMIT')
        return result
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK')
        throw err
      }
    } finally {
      this.mutex.unlock()
    }
  }

  /**
   * One login batch in one transaction. On a file database it commits without waiting for the
   * disk, leaves the lock to the next requests, and resolves once the WAL is synced (WalSync):
   * no login is answered before its session is on disk, and the event loop never waits for it.
   */
  async recordLogins(logins: LoginRecord[], keep?: number): Promise<EndedSession[]> {
    const wal = this.wal
    if (!wal?.usable()) return this.mutex.run(() => this.loginBatch.immediate(logins, keep))
    const ended = await this.mutex.run(() => {
      this.syncNormal.run()
      try {
        return this.loginBatch.immediate(logins, keep)
      } finally {
        this.syncFull.run()
      }
    })
    await wal.flush()
    return ended
  }

  ping(): Promise<void> {
    return this.mutex.run(() => {
      this.pingStmt.get()
    })
  }

  async snapshot(path: string): Promise<void> {
    // Held until the copy's first step ran; later steps interleave with units of work.
    await this.mutex.lock()
    const copy = backupTo(this.db, path)
    try {
      await copy.firstStep
    } finally {
      this.mutex.unlock()
    }
    await copy.done
  }

  storageProblems(): Promise<string[]> {
    return this.mutex.run(() => storageProblems(this.db))
  }

  integrityFacts(): Promise<IntegrityFacts> {
    return this.mutex.run(() => integrityFacts(this.db))
  }

  async close(): Promise<void> {
    this.wal?.close()
    this.onClose?.()
  }
}
