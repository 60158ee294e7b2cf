import { subscribe } from 'node:diagnostics_channel'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { SecondaryResult } from './jwt/authenticate.js'
import type { SignatureThreads } from './jwt/signature-threads.js'
import type { SignerKeys } from './jwt/signer-keys.js'
import type { VerifiedTokenCache } from './jwt/verified-cache.js'
import { type LoginEvent, loginFailureReason, secondaryReason } from './metrics/login-reasons.js'
import type { BatchWriterStats } from './store/batch-writer.js'
import { STATEMENT_CHANNEL } from './store/postgres/statement-channel.js'

// Statements this process's PostgreSQL pools sent: one subscription per process (this module is
// loaded once, and only when metrics are on); each registry counts from its own creation.
let statementsSent = 0
subscribe(STATEMENT_CHANNEL, () => {
  statementsSent++
})

/**
 * A counter that follows tallies kept elsewhere, one per value of `label`: each scrape adds what
 * each tally gained since the last one (counting from the counter's creation).
 */
function followTallies(
  registers: Registry[],
  name: string,
  help: string,
  label: string,
  read: () => Record<string, number>,
): void {
  const seen = { ...read() }
  new Counter({
    name,
    help,
    labelNames: [label],
    registers,
    collect() {
      for (const [value, now] of Object.entries(read())) {
        this.inc({ [label]: value }, now - (seen[value] ?? 0))
        seen[value] = now
      }
    },
  })
}

/** A counter without labels that follows a running total (`read`) from now on. */
function followTotal(registers: Registry[], name: string, help: string, read: () => number): void {
  let seen = read()
  new Counter({
    name,
    help,
    registers,
    collect() {
      const now = read()
      this.inc(now - seen)
      seen = now
    },
  })
}

/** What the gauges read when scraped, and what the counters follow (the app's services). */
export interface MetricSources {
  /** Live API sessions, counted in the store (every instance's). */
  sessions: () => Promise<number>
  keys: SignerKeys
  cache: VerifiedTokenCache
  /** Token verifications run, and those answered from the verified-token cache. */
  verifierStats: { verified: number; cacheHits: number }
  /** Signature checks run on a signature thread and on the libuv pool, threads given up. */
  signatureStats: SignatureThreads['stats']
  /** The logins' group commits: units of work, logins committed, seconds one was in flight. */
  loginCommits: BatchWriterStats
}

/**
 * The Prometheus metrics of one app instance, in a registry of its own (never prom-client's global
 * one, so that several apps, as in the tests, each count their own; the signature threads and the
 * PostgreSQL statements are the process's, counted from the registry's creation). Every label value
 * comes from a fixed set or from stored data (route patterns, signer ids), never from a request's
 * raw input.
 */
export class Metrics {
  readonly registry = new Registry()
  private readonly http: Counter<'method' | 'route' | 'status'>
  private readonly duration: Histogram<'method' | 'route'>
  private readonly logins: Counter<'method' | 'result' | 'reason'>
  private readonly secondaries: Counter<'result' | 'reason'>
  /**
   * Met secondary checks not yet added to `secondaries`: one on nearly every request of a session
   * under such a policy, a tally is cheaper there than prom-client's labelled inc; scrapes add it.
   */
  private secondariesMet = 0
  private readonly jwksFetches: Counter<'signer_id' | 'result'>
  private readonly enrollments: Counter<'method' | 'result' | 'reason'>

  constructor() {
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    this.http = new Counter({
      name: 'ctrl_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    })
    this.duration = new Histogram({
      name: 'ctrl_http_request_duration_seconds',
      help: 'Time to answer HTTP requests, by method and route pattern',
      labelNames: ['method', 'route'],
      registers,
    })
    this.logins = new Counter({
      name: 'ctrl_logins_total',
      help: 'Login attempts by method (password, ext-jwt), result (success, failure) and reason',
      labelNames: ['method', 'result', 'reason'],
      registers,
    })
    const metrics = this
    this.secondaries = new Counter({
      name: 'ctrl_secondary_checks_total',
      help: 'Secondary-factor (external JWT) checks by result (met, unmet) and reason',
      labelNames: ['result', 'reason'],
      registers,
      collect() {
        if (metrics.secondariesMet === 0) return
        this.inc({ result: 'met', reason: 'none' }, metrics.secondariesMet)
        metrics.secondariesMet = 0
      },
    })
    this.enrollments = new Counter({
      name: 'ctrl_enrollments_total',
      help: 'JWT enrollments by method (token, cert), result (success, failure) and reason',
      labelNames: ['method', 'result', 'reason'],
      registers,
    })
    this.jwksFetches = new Counter({
      name: 'ctrl_jwks_fetches_total',
      help: 'JWKS fetches by signer and result (ok, error)',
      labelNames: ['signer_id', 'result'],
      registers,
    })
    followTotal(
      registers,
      'ctrl_db_statements_total',
      'Statements (round trips) sent to PostgreSQL by the connection pool (none on SQLite)',
      () => statementsSent,
    )
  }

  /** Counts one answered request; `route` is the route pattern or `unmatched`. */
  request(method: string, route: string, status: number | 'aborted', seconds: number): void {
    // An aborted request has no answer whose time would mean anything.
    if (status !== 'aborted') this.duration.observe({ method, route }, seconds)
    this.http.inc({ method, route, status })
  }

  readonly login = (event: LoginEvent): void => {
    const reason = event.ok ? 'none' : loginFailureReason(event.error, event.refusal)
    this.logins.inc({ method: event.method, result: event.ok ? 'success' : 'failure', reason })
  }

  /** One enrollment attempt; `reason` is one of ENROLLMENT_REASONS (`none` on success). */
  readonly enrollment = (method: 'token' | 'cert', reason: string): void => {
    this.enrollments.inc({ method, result: reason === 'none' ? 'success' : 'failure', reason })
  }

  readonly secondary = (result: SecondaryResult): void => {
    if (result.met) this.secondariesMet++
    else this.secondaries.inc({ result: 'unmet', reason: secondaryReason(result) })
  }

  /** Follows the app's services: fetch events as they happen, the gauges when scraped. */
  watch(sources: MetricSources): void {
    const { keys, cache, verifierStats } = sources
    const registers = [this.registry]
    keys.onFetched((signerId, ok) => {
      this.jwksFetches.inc({ signer_id: signerId, result: ok ? 'ok' : 'error' })
    })
    // A deleted signer's series go with it.
    keys.onInvalidate((signerId) => {
      if (keys.getById(signerId)) return
      for (const result of ['ok', 'error']) this.jwksFetches.remove({ signer_id: signerId, result })
    })
    // The verifier and the signature threads count for themselves.
    followTallies(
      registers,
      'ctrl_verified_token_cache_total',
      'Verified-token cache lookups of JWT logins and secondary checks, by result (hit, miss)',
      'result',
      () => ({ hit: verifierStats.cacheHits, miss: verifierStats.verified }),
    )
    const { signatureStats } = sources
    followTallies(
      registers,
      'ctrl_signature_checks_total',
      'JWT signature checks of the process, by where they were answered (thread: a signature thread; pool: the libuv thread pool, while no thread can take them)',
      'runner',
      () => ({ thread: signatureStats.thread, pool: signatureStats.pool }),
    )
    followTallies(
      registers,
      'ctrl_signature_thread_failures_total',
      'Signature threads of the process given up (their checks then run on the libuv pool), by reason',
      'reason',
      () => signatureStats.failures,
    )
    const { loginCommits } = sources
    followTotal(
      registers,
      'ctrl_login_commits_total',
      'Group commits of logins: units of work sent to the store, each storing the sessions and audit events of the logins that arrived together',
      () => loginCommits.writes,
    )
    followTotal(
      registers,
      'ctrl_login_commit_logins_total',
      'Logins committed by the group commits',
      () => loginCommits.committed,
    )
    followTotal(
      registers,
      'ctrl_login_commit_seconds_total',
      'Seconds at least one group commit of logins was in flight (the rate is the share of time logins wait on the store)',
      () => loginCommits.seconds,
    )
    new Gauge({
      name: 'ctrl_verified_token_cache_entries',
      help: 'Tokens held in the verified-token cache',
      registers,
      collect() {
        this.set(cache.size)
      },
    })
    new Gauge({
      name: 'ctrl_api_sessions',
      help: 'Live API sessions',
      registers,
      async collect() {
        // A store that does not answer leaves the last count rather than failing the whole scrape.
        await sources.sessions().then(
          (n) => this.set(n),
          () => {},
        )
      },
    })
    new Gauge({
      name: 'ctrl_signers',
      help: 'External JWT signers, by enabled (true, false)',
      labelNames: ['enabled'],
      registers,
      collect() {
        const all = keys.all()
        const enabled = all.filter((e) => e.signer.enabled).length
        this.set({ enabled: 'true' }, enabled)
        this.set({ enabled: 'false' }, all.length - enabled)
      },
    })
    new Gauge({
      name: 'ctrl_jwks_keys',
      help: 'Keys in the JWKS last fetched, by signer',
      labelNames: ['signer_id'],
      registers,
      collect() {
        this.reset()
        for (const { signer, keySet } of keys.all())
          if (keySet) this.set({ signer_id: signer.id }, keySet.status().kids.length)
      },
    })
    new Gauge({
      name: 'ctrl_jwks_last_success_timestamp_seconds',
      help: 'When the JWKS of a signer was last fetched successfully (Unix seconds)',
      labelNames: ['signer_id'],
      registers,
      collect() {
        this.reset()
        for (const { signer, keySet } of keys.all()) {
          const at = keySet?.lastSuccessAt()
          if (at !== undefined) this.set({ signer_id: signer.id }, at / 1000)
        }
      },
    })
  }

  /** The exposition: the Prometheus text format and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() }
  }
}

/** A fresh set of metrics for one app, with prom-client's process and Node.js metrics. */
export function createMetrics(): Metrics {
  return new Metrics()
}
