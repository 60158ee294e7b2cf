import { realpathSync } from 'node:fs'
import { AppError } from '../../errors.js'
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
import { BackgroundCheckpoints, type BackgroundCheckpointsOptions } from './checkpoints.js'
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
  /**
   * Two: a batch on a file database waits for its WAL's sync after it commits and left the lock,
   * and the next one commits meanwhile (WalSync answers them in order). In memory a batch is
   * synchronous, and the second never overlaps.
   */
  readonly loginBatchesAtOnce = 2
  readonly repos: Repositories
  private readonly mutex = new Mutex()
  private readonly inTx: UnitOfWork
  private readonly pingStmt
  private readonly loginBatch
  /** A file database's WAL, synced off the event loop after each login batch (see WalSync). */
  private readonly wal: WalSync | undefined
  /** A file database's WAL checkpoints, on a thread of their own (see BackgroundCheckpoints). */
  readonly checkpoints: BackgroundCheckpoints | undefined
  /**
   * Set for good once a login batch's WAL could not be synced (or the connection's sync level
   * could not be restored after one): the batch's pages are indexed in the WAL yet may never reach
   * the disk, and a commit appended after them could be lost with them at recovery (the WAL's
   * checksums chain). Every later call is refused with this error until the process restarts, when
   * SQLite's recovery keeps the WAL up to the last frame that did reach the disk, as PostgreSQL
   * stops at a failed WAL flush.
   */
  private unsound: AppError | undefined

  constructor(
    readonly db: Db,
    private readonly onClose?: () => void,
    options: {
      /** How the WAL is synced after a login batch (tests hold or fail it); fdatasync by default. */
      syncFile?: SyncFile
      /** Checkpoints on a thread of their own (default: yes, for a WAL file); `false`: in commits. */
      checkpoints?: BackgroundCheckpointsOptions | false
    } = {},
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
    this.repos = facades(sync, this.run)
    // Inside a unit of work the lock is already held: statements run at once.
    this.inTx = { ...facades(sync, now), publish: async () => {} }
    this.pingStmt = db.prepare('SELECT 1')
    // One synchronous transaction (better-sqlite3 keeps its BEGIN and COMMIT prepared).
    const loginState = db.prepare<[string], { disabled: number; password_hash: string | null }>(
      'SELECT disabled, password_hash FROM identities WHERE id = ?',
    )
    this.loginBatch = db.transaction((batch: LoginRecord[], keep?: number): EndedSession[] => {
      // Each login's identity as it is now, in this transaction (see the contract).
      const refused: EndedSession[] = []
      const logins = batch.filter((l) => {
        const now = loginState.get(l.session.identityId)
        const ok =
          now !== undefined &&
          now.disabled === 0 &&
          (l.passwordHash === undefined || now.password_hash === l.passwordHash)
        if (!ok) refused.push({ id: l.session.id, identityId: l.session.identityId, refused: true })
        return ok
      })
      sessions.insertMany(logins.map((l) => l.session))
      audit.insertMany(logins.map((l) => l.event))
      if (keep === undefined || logins.length === 0) return refused
      const ids = [...new Set(logins.map((l) => l.session.identityId))]
      const ended = sessions.trimForIdentities(ids, keep)
      return refused.length === 0 ? ended : [...ended, ...refused]
    })
    const wal = !db.memory && db.pragma('journal_mode', { simple: true }) === 'wal'
    // SQLite names the WAL after the database's real path (symbolic links resolved).
    const file = wal ? realpathSync(db.name) : undefined
    this.wal = file ? new WalSync(`${file}-wal`, options.syncFile) : undefined
    const checkpoints = options.checkpoints === false ? undefined : (options.checkpoints ?? {})
    this.checkpoints =
      file && checkpoints
        ? new BackgroundCheckpoints(file, {
            ...checkpoints,
            onDiskFailure: (code) => {
              this.becomeUnsound()
              checkpoints.onDiskFailure?.(code)
            },
          })
        : undefined
  }

  /** Nothing kept is trusted once the store is unsound: every read goes to it, and is refused. */
  get stale(): boolean {
    return this.unsound !== undefined
  }

  /** Runs `fn` under the lock, unless the store is unsound. */
  private readonly run: Runner = (fn) =>
    this.unsound ? Promise.reject(this.unsound) : this.mutex.run(fn)

  private becomeUnsound(): AppError {
    // Nothing is written any more, and no checkpoint is asked for (one already running ends first).
    this.checkpoints?.stop()
    this.unsound ??= new AppError('SERVICE_UNAVAILABLE', {
      cause: {
        field: 'database',
        reason: 'the database file could not be written to disk; restart the controller',
      },
    })
    return this.unsound
  }

  onFeed(_listener: (event: FeedEvent) => void): void {
    // One process owns the file: there are no other instances to hear from.
  }

  async transaction<T>(work: (tx: UnitOfWork) => Promise<T>): Promise<T> {
    await this.mutex.lock()
    try {
      if (this.unsound) throw this.unsound
      this.db.exec('BEGIN IMMEDIATE')
      try {
        const result = await work(this.inTx)
        this.db.exec('COMMIT')
        this.checkpoints?.written()
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
   * A sync that fails makes the store unsound (see `unsound`) and refuses the batch with it.
   */
  async recordLogins(logins: LoginRecord[], keep?: number): Promise<EndedSession[]> {
    const wal = this.wal
    if (!wal?.usable()) return this.run(() => this.loginBatch.immediate(logins, keep))
    const ended = await this.run(() => {
      // exec, not pragma(): no statement object, no result array (in a loop of its own a fifth of
      // pragma()'s time; in the fixed-rate login profile 2.8 -> 2.5 µs a login).
      // SQLite applies this pragma as the statement is prepared, so it is never kept prepared.
      this.db.exec('PRAGMA synchronous = NORMAL')
      try {
        return this.loginBatch.immediate(logins, keep)
      } finally {
        try {
          this.db.exec('PRAGMA synchronous = FULL')
        } catch {
          // Every later write would commit without its sync: none may.
          this.becomeUnsound()
        }
      }
    })
    try {
      await wal.flush()
    } catch {
      throw this.becomeUnsound()
    }
    if (this.unsound) throw this.unsound
    this.checkpoints?.written()
    return ended
  }

  ping(): Promise<void> {
    return this.run(() => {
      this.pingStmt.get()
    })
  }

  async snapshot(path: string): Promise<void> {
    // Held until the copy's first step ran; later steps interleave with units of work.
    await this.mutex.lock()
    if (this.unsound) {
      this.mutex.unlock()
      throw this.unsound
    }
    const copy = backupTo(this.db, path)
    try {
      await copy.firstStep
    } finally {
      this.mutex.unlock()
    }
    await copy.done
  }

  storageProblems(): Promise<string[]> {
    return this.run(() => storageProblems(this.db))
  }

  integrityFacts(): Promise<IntegrityFacts> {
    return this.run(() => integrityFacts(this.db))
  }

  async close(): Promise<void> {
    // The thread's connection closes first: the last one to close checkpoints and removes the WAL.
    await this.checkpoints?.close()
    this.wal?.close()
    this.onClose?.()
  }
}
