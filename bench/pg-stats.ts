import { existsSync } from 'node:fs'
import pg from 'pg'
import { cpuTimeUs, runQueueWaitUs, SCHEDSTAT } from './common.js'
import { databaseUrl, PG_SERVER } from './databases.js'

/**
 * How long a backend may hold its statistics before they reach pg_stat_database: PostgreSQL 15
 * flushes them at most once a second while busy, and within 10 s of going idle.
 */
export const STATS_FLUSH_MS = 11_000
const SAMPLE_MS = 200
const APP = 'ctrl-bench-stats'

export interface DatabaseCounters {
  xactCommit: number
  xactRollback: number
  /** pg_stat_database.active_time (PostgreSQL 14 and later): time spent running statements. */
  activeTimeMs: number
}

/** What pg_stat_statements says of the database (when the server loads it). */
export interface StatementStats {
  calls: number
  execMs: number
}

/** The server's statistics on one database, read over connections the bench keeps apart. */
export class DatabaseStats {
  private constructor(
    private readonly admin: pg.Client,
    private readonly name: string,
    /** A connection to the database itself, for pg_stat_statements (when loaded). */
    private readonly inside: pg.Client | undefined,
  ) {}

  static async open(name: string): Promise<DatabaseStats> {
    const admin = new pg.Client({ connectionString: PG_SERVER, application_name: APP })
    await admin.connect()
    const libs = (
      await admin.query<{ l: string }>("SELECT current_setting('shared_preload_libraries') AS l")
    ).rows[0]?.l
    if (!libs?.split(',').some((l) => l.trim() === 'pg_stat_statements')) {
      return new DatabaseStats(admin, name, undefined)
    }
    const inside = new pg.Client({ connectionString: databaseUrl(name), application_name: APP })
    await inside.connect()
    await inside.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    return new DatabaseStats(admin, name, inside)
  }

  /** Whether pg_stat_statements figures are read (the server must preload it). */
  get statementStats(): boolean {
    return this.inside !== undefined
  }

  async counters(): Promise<DatabaseCounters> {
    // A fresh read, not the snapshot of an earlier statement in this session.
    await this.admin.query('SELECT pg_stat_clear_snapshot()')
    const { rows } = await this.admin.query<{ c: string; r: string; a: number }>(
      'SELECT xact_commit AS c, xact_rollback AS r, active_time AS a FROM pg_stat_database WHERE datname = $1',
      [this.name],
    )
    const row = rows[0]
    if (!row) throw new Error(`bench: no statistics for database ${this.name}`)
    return { xactCommit: Number(row.c), xactRollback: Number(row.r), activeTimeMs: row.a }
  }

  /**
   * The process ids of the database's backends: its connections' and any worker's (parallel query,
   * autovacuum) working on it; the bench's own connections left out.
   */
  async backends(): Promise<number[]> {
    const { rows } = await this.admin.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2',
      [this.name, APP],
    )
    return rows.map((r) => r.pid)
  }

  /** Starts pg_stat_statements over for this database (a no-op when it is not loaded). */
  async resetStatements(): Promise<void> {
    await this.inside?.query(
      'SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = $1), 0)',
      [this.name],
    )
  }

  async statements(): Promise<StatementStats | undefined> {
    if (!this.inside) return undefined
    const { rows } = await this.inside.query<{ calls: string; ms: number }>(
      `SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(total_exec_time), 0) AS ms
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
          AND query NOT LIKE '%pg_stat_statements%'`,
      [this.name],
    )
    return { calls: Number(rows[0]?.calls ?? 0), execMs: Number(rows[0]?.ms ?? 0) }
  }

  async close(): Promise<void> {
    await this.admin.end()
    await this.inside?.end()
  }
}

/** A backend's CPU time and time waiting for a CPU so far, in µs. */
interface Times {
  cpuUs: number
  waitUs: number | undefined
}

const NONE: Times = { cpuUs: 0, waitUs: 0 }

/**
 * A backend's times now; undefined once it ended (also when it ended between the two reads: its
 * CPU and wait then stay as last read).
 */
function readTimes(pid: number): Times | undefined {
  const cpuUs = cpuTimeUs(pid)
  if (cpuUs === undefined) return undefined
  const waitUs = SCHEDSTAT ? runQueueWaitUs(pid) : undefined
  if (SCHEDSTAT && waitUs === undefined && !existsSync(`/proc/${pid}`)) return undefined
  return { cpuUs, waitUs }
}

export interface BackendCpu {
  /** CPU time (user and system) the database's backends spent during the run, in µs. */
  cpuUs: number
  /**
   * Time the backends were ready to run but waited for a CPU that another process held (on the
   * bench's machine mostly the controller and the load generator), in µs; undefined where the
   * kernel does not say.
   */
  waitUs: number | undefined
  /** Backends seen during the run. */
  seen: number
  /** Backends that ended during the run: their CPU after the last sample (< 200 ms) is missed. */
  ended: number
}

/**
 * Samples the CPU time of the database's backend processes (/proc/<pid>/stat), and their time
 * waiting for a CPU (/proc/<pid>/schedstat), every 200 ms from `start` to `stop`. Backends come and
 * go with the pool: one that starts during the run counts whole (it did all its work in the run),
 * one that ends counts until its last sample.
 */
export class BackendSampler {
  /** CPU and wait at the start (0 for a backend that started later) and at the latest sample. */
  private readonly times = new Map<number, { first: Times; last: Times }>()
  private readonly ended = new Set<number>()
  private timer: NodeJS.Timeout | undefined
  private sampling: Promise<void> = Promise.resolve()

  constructor(private readonly stats: DatabaseStats) {}

  private async sample(initial: boolean): Promise<void> {
    for (const pid of await this.stats.backends()) {
      if (!this.times.has(pid)) this.times.set(pid, { first: NONE, last: NONE })
      if (initial) {
        const now = readTimes(pid)
        if (now !== undefined) this.times.set(pid, { first: now, last: now })
      }
    }
    for (const [pid, times] of this.times) {
      if (this.ended.has(pid)) continue
      const now = readTimes(pid)
      if (now === undefined) this.ended.add(pid)
      else times.last = now
    }
  }

  async start(): Promise<void> {
    await this.sample(true)
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample(false)).catch(() => {})
    }, SAMPLE_MS)
  }

  async stop(): Promise<BackendCpu> {
    clearInterval(this.timer)
    await this.sampling
    await this.sample(false)
    let cpuUs = 0
    let waitUs: number | undefined = 0
    for (const { first, last } of this.times.values()) {
      cpuUs += last.cpuUs - first.cpuUs
      waitUs =
        waitUs === undefined || last.waitUs === undefined || first.waitUs === undefined
          ? undefined
          : waitUs + last.waitUs - first.waitUs
    }
    return { cpuUs, waitUs, seen: this.times.size, ended: this.ended.size }
  }
}
