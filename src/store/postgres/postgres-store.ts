import { randomUUID } from 'node:crypto'
import pg from 'pg'

const { escapeLiteral } = pg

import {
  type EndedSession,
  type FeedEvent,
  type IntegrityFacts,
  type LoginRecord,
  type Repositories,
  SESSIONS_CHANGED,
  type Store,
  type StoreChange,
  type UnitOfWork,
} from '../contract.js'
import type { Migration, MigrationLog } from '../migrations.js'
import { PgAuditRepository } from './audit-repository.js'
import { PgAuthPolicyRepository } from './auth-policy-repository.js'
import {
  createPool,
  migrationClient,
  type PgSettings,
  type Queryable,
  waitForServer,
} from './connection.js'
import { PgControllerRepository } from './controller-repository.js'
import { mapPgError } from './errors.js'
import { PgIdentityRepository } from './identity-repository.js'
import { pgIntegrityFacts, snapshotRefused } from './integrity.js'
import { type LoginNotices, NOTICE_ID, recordLogins } from './login-batch.js'
import { PgLoginFailureRepository } from './login-failure-repository.js'
import { migratePostgres } from './migrate.js'
import { CHANNEL, ChangeListener, PING_INTERVAL_MS } from './notifications.js'
import {
  conflictError,
  isStalePlan,
  mayRetry,
  type RetryPolicy,
  retryableCode,
  retryingPool,
} from './retry.js'
import { PgSessionRepository } from './session-repository.js'
import { PgSignerRepository } from './signer-repository.js'

/**
 * The COMMIT of a unit of work, preceded by its notifications in the same simple query (one round
 * trip). The payloads are our own JSON, quoted as literals by the driver's escaping; if a NOTIFY
 * fails, the COMMIT after it is not run and the unit of work is rolled back.
 */
function commitWith(notices: string[]): string {
  if (notices.length === 0) return 'COMMIT'
  const calls = notices.map((n) => `pg_notify('${CHANNEL}', ${escapeLiteral(n)})`)
  return `SELECT ${calls.join(', ')}; COMMIT`
}

function repositories(db: Queryable): Repositories {
  return {
    signers: new PgSignerRepository(db),
    identities: new PgIdentityRepository(db),
    policies: new PgAuthPolicyRepository(db),
    sessions: new PgSessionRepository(db),
    audit: new PgAuditRepository(db),
    loginFailures: new PgLoginFailureRepository(db),
    controllers: new PgControllerRepository(db),
  }
}

export interface OpenPgOptions {
  settings: PgSettings
  migrations: Migration[]
  log: MigrationLog & { warn(obj: object, msg: string): void }
  /** Runs under the migration lock with the migrated store (the bootstrap admin). */
  underLock?: (store: Store) => Promise<void>
}

/** A unit of work's statement met a plan gone stale on its connection (see isStalePlan). */
class StalePlan extends Error {
  constructor(override readonly cause: unknown) {
    super('prepared statement gone stale')
  }
}

/** The PostgreSQL store: a pool per instance, units of work on one client, changes by NOTIFY. */
export class PgStore implements Store {
  readonly kind = 'postgres'
  /** One at a time: two at once compete for the same connections and cores (BatchWriter). */
  readonly loginBatchesAtOnce = 1
  readonly repos: Repositories
  private readonly listener: ChangeListener
  private readonly loginNotices: LoginNotices
  /** Work the server rolled back for a deadlock runs again: see ./retry.ts. */
  private readonly retry: RetryPolicy
  /** Connections in the pool, at most (a unit of work meets a stale plan on at most as many). */
  private readonly poolSize: number
  /** A statement runs at most this long (the server's `statement_timeout`). */
  private readonly statementTimeoutMs: number
  /** When the pool last handed out or took back a connection (performance.now()). */
  private poolMovedAt = performance.now()

  private constructor(
    private readonly pool: pg.Pool,
    settings: PgSettings,
    log: OpenPgOptions['log'],
  ) {
    this.listener = new ChangeListener(settings, randomUUID(), log)
    this.poolSize = settings.poolSize
    this.statementTimeoutMs = settings.statementTimeoutMs
    const moved = () => {
      this.poolMovedAt = performance.now()
    }
    pool.on('acquire', moved)
    pool.on('release', moved)
    this.loginNotices = {
      channel: CHANNEL,
      opened: this.listener.payload(SESSIONS_CHANGED),
      ended: this.listener.payload({
        entity: 'identity-sessions',
        op: 'delete',
        id: JSON.parse(NOTICE_ID) as string, // the id's place, filled in by the statement
      }),
    }
    this.retry = {
      budgetMs: settings.statementTimeoutMs,
      onRetry: (sqlstate, attempt) =>
        log.warn(
          { sqlstate, attempt },
          'PostgreSQL rolled back a transaction for a deadlock or serialization failure; running it again',
        ),
      // At most once per connection and schema change: the connection is dropped.
      onStalePlan: (within) =>
        log.info(
          { within },
          'a statement prepared before a schema change (a later release migrated) runs again on a new plan',
        ),
    }
    this.repos = repositories(retryingPool(pool, this.retry))
  }

  /** Waits for the server (CTRL_DB_CONNECT_TIMEOUT), migrates under the lock and starts listening. */
  static async open(o: OpenPgOptions): Promise<PgStore> {
    await waitForServer(o.settings, (attempt, reason) =>
      o.log.warn({ attempt, reason }, 'PostgreSQL not reachable yet; retrying'),
    )
    const pool = createPool(o.settings)
    const store = new PgStore(pool, o.settings, o.log)
    try {
      const client = await migrationClient(o.settings)
      try {
        await migratePostgres(
          client,
          o.migrations,
          o.log,
          () => o.underLock?.(store) ?? Promise.resolve(),
        )
      } finally {
        await client.end().catch(() => {})
      }
      await store.listener.start()
    } catch (err) {
      await store.close()
      throw err
    }
    return store
  }

  get stale(): boolean {
    return this.listener.stale
  }

  onFeed(listener: (event: FeedEvent) => void): void {
    this.listener.on(listener)
  }

  async transaction<T>(work: (tx: UnitOfWork) => Promise<T>): Promise<T> {
    return this.onClient('BEGIN', async (client) => {
      const notices: string[] = []
      const tx: UnitOfWork = {
        ...repositories(client),
        // Sent with the COMMIT (NOTIFY is delivered at commit anyway): no round trip of its own.
        publish: async (change: StoreChange) => {
          notices.push(this.listener.payload(change))
        },
      }
      return { result: await work(tx), commit: commitWith(notices) }
    })
  }

  /**
   * Runs `work` on one pooled connection between `begin` and the COMMIT it returns, and rolls
   * back on any error. The BEGIN is pipelined with the work's first statement: no round trip of
   * its own. Only a lost connection fails a BEGIN, and then every statement written behind it
   * fails too.
   */
  private async onClient<T>(
    begin: string,
    work: (client: pg.PoolClient) => Promise<{ result: T; commit: string }>,
  ): Promise<T> {
    // A plan gone stale (isStalePlan) is the connection's, not the work's: the work runs again on
    // another. Each connection it failed on is dropped, so within one more attempt than the pool
    // has connections it meets one that prepares its statements anew.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.onOneClient(begin, work)
      } catch (err) {
        if (!(err instanceof StalePlan)) throw err // mapped already
        if (attempt > this.poolSize) throw mapPgError(err.cause)
        this.retry.onStalePlan?.('unit of work')
      }
    }
  }

  /** onClient on one pooled connection (throws StalePlan when its plans went stale). */
  private async onOneClient<T>(
    begin: string,
    work: (client: pg.PoolClient) => Promise<{ result: T; commit: string }>,
  ): Promise<T> {
    let client: pg.PoolClient
    try {
      client = await this.pool.connect()
    } catch (err) {
      throw mapPgError(err)
    }
    let broken = false
    // A connection lost between statements (between attempts, say) would otherwise be an
    // 'error' event no one listens to: the next statement fails instead, and the client is dropped.
    const onError = () => {
      broken = true
    }
    client.on('error', onError)
    const startedAt = performance.now()
    try {
      for (let attempt = 1; ; attempt++) {
        const begun = client.query(begin)
        begun.catch(() => {}) // awaited below, after the work that was written behind it
        try {
          const { result, commit } = await work(client)
          await begun
          await client.query(commit)
          return result
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {
            broken = true
          })
          if (!broken && isStalePlan(err, true)) {
            broken = true // dropped: its prepared statements would fail again
            throw new StalePlan(err)
          }
          // A deadlock or serialization failure rolled it all back: the work runs again whole,
          // on the same connection (each run gathers its own notifications).
          const sqlstate = retryableCode(err)
          if (broken || sqlstate === undefined) throw mapPgError(err)
          if (!(await mayRetry(this.retry, sqlstate, attempt, startedAt))) throw conflictError()
        }
      }
    } finally {
      client.off('error', onError)
      client.release(broken)
    }
  }

  recordLogins(logins: LoginRecord[], keep?: number): Promise<EndedSession[]> {
    return recordLogins(this.pool, logins, keep, this.loginNotices, this.retry)
  }

  /**
   * Whether the database answers. While a burst holds every pooled connection, a ping through the
   * pool would wait behind it (up to the statement timeout), and a balancer's short check would
   * take a busy instance out of service, the others' load growing by its share. When the pool
   * is at work (it handed out or took back a connection within a statement timeout, the longest a
   * statement runs), the notification connection's ping tells that the server answers without
   * queueing. A pool whose every connection has been held longer (hung connections, a leak) is
   * not at work: the ping goes through it, as before, and fails when it cannot get a connection.
   */
  async ping(): Promise<void> {
    const poolBusy = this.pool.idleCount === 0 && this.pool.totalCount >= this.poolSize
    const atWork = performance.now() - this.poolMovedAt <= this.statementTimeoutMs
    if (poolBusy && atWork && (await this.listener.answers(2 * PING_INTERVAL_MS))) return
    try {
      await this.pool.query({ name: 'ping', text: 'SELECT 1' })
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async snapshot(_path: string): Promise<void> {
    throw snapshotRefused()
  }

  /** The server keeps its own pages consistent; only the controller's rules are checked here. */
  async storageProblems(): Promise<string[]> {
    return []
  }

  /** Read in one snapshot: a change between two reads cannot look like a broken reference. */
  integrityFacts(): Promise<IntegrityFacts> {
    return this.onClient('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (client) => ({
      result: await pgIntegrityFacts(client),
      commit: 'COMMIT',
    }))
  }

  async close(): Promise<void> {
    await this.listener.close()
    await this.pool.end().catch(() => {})
  }
}
