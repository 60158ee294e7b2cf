import { measure, type Result } from './common.js'
import { type Controller, startController } from './controller.js'
import { distinctLogins, LOGIN_TOKENS, LOGIN_USERS, loginFixture, warmLogins } from './login.js'
import { BackendSampler, type DatabaseCounters, DatabaseStats, STATS_FLUSH_MS } from './pg-stats.js'
import { freePort } from './processes.js'

/** Identities the spread logins are of: each stays below the default cap of 100 sessions. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Inputs {
  name: string
  result: Result
  statements: number
  transactions: number
  rollbacks: number
  activeUs: number
  backendUs: number
  /** The backends' time waiting for a CPU, when the kernel says. */
  backendWaitUs: number | undefined
  backends: { seen: number; ended: number }
  statementStats?: { calls: number; execUs: number } | undefined
  /** The logins' group commits during the run, when it stored any. */
  commits?:
    | { loginsEach: number; msEach: number; busy: number; waitMsEach: number | undefined }
    | undefined
}

/** The controller's totals that the capacity inputs read from its metrics. */
const TOTALS = {
  statements: 'ctrl_db_statements_total',
  commits: 'ctrl_login_commits_total',
  committed: 'ctrl_login_commit_logins_total',
  commitSeconds: 'ctrl_login_commit_seconds_total',
} as const
type Totals = Record<keyof typeof TOTALS, number>

/** What the controller has counted so far (its metrics, scraped). */
async function totals(metricsUrl: string): Promise<Totals> {
  const text = await (await fetch(metricsUrl)).text()
  const read = (name: string) => {
    const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]
    if (value === undefined) throw new Error(`bench: the controller exposes no ${name}`)
    return Number(value)
  }
  return Object.fromEntries(
    Object.entries(TOTALS).map(([key, name]) => [key, read(name)]),
  ) as Totals // every key of TOTALS
}

/**
 * One request kind's per-request inputs: `run` measures it (after its warm-up it calls the hook it
 * is given, which waits for the warm-up's statistics to reach pg_stat_database and then reads the
 * counters); after the run the counters are read again once the run's statistics are flushed.
 */
async function inputs(
  name: string,
  stats: DatabaseStats,
  metricsUrl: string,
  run: (beforeRun: () => Promise<void>) => Promise<Result>,
): Promise<Inputs> {
  const sampler = new BackendSampler(stats)
  let before: { db: DatabaseCounters; counted: Totals } | undefined
  const result = await run(async () => {
    await sleep(STATS_FLUSH_MS)
    await stats.resetStatements()
    before = { db: await stats.counters(), counted: await totals(metricsUrl) }
    await sampler.start()
  })
  const backend = await sampler.stop()
  const counted = await totals(metricsUrl)
  const statementStats = await stats.statements()
  await sleep(STATS_FLUSH_MS)
  const after = await stats.counters()
  if (!before) throw new Error('bench: the run did not call its hook')
  const n = result.requests
  const commits = counted.commits - before.counted.commits
  const commitSeconds = counted.commitSeconds - before.counted.commitSeconds
  return {
    name,
    result,
    statements: (counted.statements - before.counted.statements) / n,
    transactions: (after.xactCommit - before.db.xactCommit) / n,
    rollbacks: (after.xactRollback - before.db.xactRollback) / n,
    activeUs: ((after.activeTimeMs - before.db.activeTimeMs) * 1000) / n,
    backendUs: backend.cpuUs / n,
    backendWaitUs: backend.waitUs === undefined ? undefined : backend.waitUs / n,
    backends: backend,
    statementStats: statementStats && {
      calls: statementStats.calls / n,
      execUs: (statementStats.execMs * 1000) / n,
    },
    commits:
      commits > 0
        ? {
            loginsEach: (counted.committed - before.counted.committed) / commits,
            msEach: (commitSeconds * 1000) / commits,
            // Of the run's own duration (its requests at its rate).
            busy: commitSeconds / (n / result.rps),
            waitMsEach: backend.waitUs === undefined ? undefined : backend.waitUs / 1000 / commits,
          }
        : undefined,
  }
}

function print(rows: Inputs[], stats: DatabaseStats, db: string): void {
  console.log(
    `\ncapacity inputs (PostgreSQL): one controller instance as \`npm start\` runs it, metrics on, database ${db} of its own; per request:`,
  )
  console.log(
    `  ${'request'.padEnd(44)} ${'req/s'.padStart(7)} ${'statements'.padStart(10)} ${'transactions'.padStart(12)} ${'db active'.padStart(10)} ${'db cpu'.padStart(9)} ${'db wait'.padStart(9)} ${'controller cpu'.padStart(14)}  errors`,
  )
  for (const r of rows) {
    const us = (v: number | undefined, w: number) =>
      `${v === undefined ? '-' : v.toFixed(0)} µs`.padStart(w)
    console.log(
      `  ${r.name.padEnd(44)} ${r.result.rps.toFixed(0).padStart(7)} ${r.statements.toFixed(2).padStart(10)} ${r.transactions.toFixed(3).padStart(12)} ${us(r.activeUs, 10)} ${us(r.backendUs, 9)} ${us(r.backendWaitUs, 9)} ${us(r.result.cpuUs, 14)}  ${r.result.errors}`,
    )
  }
  const seen = rows.reduce((n, r) => n + r.backends.seen, 0)
  const ended = rows.reduce((n, r) => n + r.backends.ended, 0)
  console.log(
    '  statements: ctrl_db_statements_total (of the pool; pipelined statements share a round trip); transactions: pg_stat_database.xact_commit' +
      ` (rollbacks: ${rows.map((r) => r.rollbacks.toFixed(3)).join(', ')});`,
  )
  console.log(
    "  db active: pg_stat_database.active_time; db cpu: utime+stime of the database's backend processes" +
      ` (${seen} seen over the runs, ${ended} ended mid-run and were read last up to 200 ms before);` +
      " db wait: the time those backends were ready to run but waited for a CPU that another process held (/proc/<pid>/schedstat; '-' where the kernel does not say);" +
      " controller cpu: the controller process. Each includes the instance's heartbeat (one write every 5 s).",
  )
  for (const r of rows) {
    if (!r.commits) continue
    console.log(
      `  group commits, ${r.name}: ${r.commits.loginsEach.toFixed(1)} logins each, ${r.commits.msEach.toFixed(2)} ms each from the controller's side, one in flight ${(100 * r.commits.busy).toFixed(0)}% of the run (ctrl_login_commit*_total)${r.commits.waitMsEach === undefined ? '' : `; the backends waited for a CPU ${r.commits.waitMsEach.toFixed(2)} ms a commit on average`}`,
    )
  }
  if (stats.statementStats) {
    for (const r of rows) {
      console.log(
        `  pg_stat_statements, ${r.name}: ${r.statementStats?.calls.toFixed(2)} calls, ${r.statementStats?.execUs.toFixed(0)} µs executing per request`,
      )
    }
  } else {
    console.log('  pg_stat_statements: not in shared_preload_libraries, so not used')
  }
}

/**
 * The inputs of a capacity estimate on PostgreSQL, per request, for one RS256 login (distinct
 * tokens, of many identities and of one past its session cap) and one list request (the client list, the management signer list): the statements and
 * transactions it costs the database, the database's time (active_time, its backends' CPU) and
 * the controller's CPU, with the requests/s measured. `db` is a database of the bench's own,
 * empty; `name` its name.
 */
export async function benchCapacity(name: string, db: string): Promise<void> {
  const metricsPort = await freePort()
  const ctrl: Controller = await startController(db, {
    signers: 100,
    env: { CTRL_METRICS_PORT: String(metricsPort) },
  })
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
  const fixture = await loginFixture(ctrl)
  const stats = await DatabaseStats.open(name)
  try {
    const rows: Inputs[] = []
    // Logins spread over many identities, each below its session cap (as most traffic is); then
    // all of one identity, past its cap, so that each login also ends its oldest session.
    await warmLogins(ctrl, fixture, 'RS256')
    const spread = await fixture.tokens('RS256', LOGIN_TOKENS)
    rows.push(
      await inputs(
        `ext-jwt login RS256, ${LOGIN_USERS} identities`,
        stats,
        metricsUrl,
        (beforeRun) => distinctLogins(ctrl, spread, beforeRun),
      ),
    )
    const tokens = await fixture.tokens('RS256', LOGIN_TOKENS, [fixture.one])
    rows.push(
      await inputs('ext-jwt login RS256, one identity', stats, metricsUrl, (beforeRun) =>
        distinctLogins(ctrl, tokens, beforeRun),
      ),
    )
    rows.push(
      await inputs('client signer list (default page, 10 listed)', stats, metricsUrl, (beforeRun) =>
        measure(`${ctrl.base}/edge/client/v1/external-jwt-signers`, { pid: ctrl.pid, beforeRun }),
      ),
    )
    const session = await ctrl.adminSession()
    rows.push(
      await inputs('management signer list (default page)', stats, metricsUrl, (beforeRun) =>
        measure(`${ctrl.base}/edge/management/v1/external-jwt-signers`, {
          pid: ctrl.pid,
          headers: { 'zt-session': session },
          beforeRun,
        }),
      ),
    )
    print(rows, stats, name)
  } finally {
    await stats.close()
    fixture.close()
    await ctrl.stop()
  }
}
