import { channel } from 'node:diagnostics_channel'
import pg from 'pg'
import { AppError } from '../../errors.js'
import { STATEMENT_CHANNEL } from './statement-channel.js'

export interface PgSettings {
  url: string
  /** Connections per instance. */
  poolSize: number
  /** How long start-up keeps retrying an unreachable server. */
  connectTimeoutMs: number
  /** Longest a statement (or waiting for a connection) may take before the request gets a 503. */
  statementTimeoutMs: number
}

export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>

/** Query parameters of a connection URL that hold secrets (the driver reads them as libpq does). */
const SECRET_PARAMS = ['password', 'sslpassword']

/** The URL with its passwords hidden (`user:password@`, `?password=`), for log lines and errors. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password !== '') u.password = '***'
    for (const name of SECRET_PARAMS) if (u.searchParams.has(name)) u.searchParams.set(name, '***')
    return u.toString()
  } catch {
    return 'postgres://(unparseable URL)'
  }
}

/** A percent-decoded value (`+` too as a space, as a query's), or undefined when broken. */
function decoded(value: string, plus = false): string | undefined {
  try {
    return decodeURIComponent(plus ? value.replaceAll('+', ' ') : value)
  } catch {
    return undefined
  }
}

/**
 * The URL's passwords, read from its text rather than through a URL parser: the driver accepts
 * URLs that `new URL` refuses (`postgres://u:pw@/db?host=/run/postgresql`), and a broken escape
 * must not hide a password from redaction. Each as written and decoded. The user info ends at the
 * last `@` before the path, the query or the fragment, or, with none there, at the last `@` of the
 * whole URL (an unescaped `/` in a password): reading too much as a password only hides more.
 */
function urlSecrets(url: string): string[] {
  const found: string[] = []
  const scheme = url.indexOf('://')
  if (scheme >= 0) {
    const rest = url.slice(scheme + 3)
    const authority = rest.slice(0, rest.search(/[/?#]|$/))
    for (const part of authority.includes('@') ? [authority] : [rest]) {
      const userinfo = part.slice(0, Math.max(part.lastIndexOf('@'), 0))
      const colon = userinfo.indexOf(':')
      if (colon >= 0) {
        const value = userinfo.slice(colon + 1)
        found.push(value, decoded(value) ?? value)
      }
    }
  }
  const query = url.indexOf('?')
  if (query >= 0) {
    for (const part of url.slice(query + 1).split(/[&#]/)) {
      const eq = part.indexOf('=')
      if (eq > 0 && SECRET_PARAMS.includes(decoded(part.slice(0, eq), true) ?? '')) {
        const value = part.slice(eq + 1)
        found.push(value, decoded(value) ?? value, decoded(value, true) ?? value)
      }
    }
  }
  return found.filter((v) => v !== '')
}

/** A driver or network message with anything that looks like one of the URL's passwords removed. */
export function redactMessage(message: string, url: string): string {
  // Longest first: a password that holds another's text is hidden whole.
  const secrets = [...new Set(urlSecrets(url))].sort((a, b) => b.length - a.length)
  let out = message
  for (const secret of secrets) out = out.split(secret).join('***')
  return out
}

/** Connection settings shared by the pool and the notification listener. */
export function clientConfig(s: PgSettings): pg.ClientConfig {
  return {
    connectionString: s.url,
    statement_timeout: s.statementTimeoutMs,
    // A server that vanished without closing the socket answers nothing: give up client-side too.
    query_timeout: s.statementTimeoutMs + 1000,
    connectionTimeoutMillis: s.statementTimeoutMs,
    keepAlive: true,
    application_name: 'ext-jwt-controller',
  }
}

const READ_COMMITTED = 'SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED'

/**
 * The connection that migrates the schema, alone: no statement or lock timeout, neither the
 * server's nor the client's. A migration of a large table may take longer than a request's
 * statement, and an instance that starts while another migrates waits for its lock; cut short,
 * either would only start again and again (a migration rolled back each time). A server that
 * vanishes is still noticed, by TCP keepalive (its first probe after 10 s idle).
 */
export async function migrationClient(s: PgSettings): Promise<pg.Client> {
  const { statement_timeout: _s, query_timeout: _q, ...config } = clientConfig(s)
  const client = new pg.Client({ ...config, keepAliveInitialDelayMillis: 10_000 })
  client.on('error', () => {}) // a lost connection fails the statement under way
  try {
    await client.connect()
    // Whatever the role's or database's defaults: never cut short, and the isolation the
    // migrations are written for (as the pool's connections).
    await client.query(
      'SET statement_timeout = 0; SET lock_timeout = 0; SET idle_in_transaction_session_timeout = 0',
    )
    await client.query(READ_COMMITTED)
  } catch (err) {
    await client.end().catch(() => {})
    throw err
  }
  return client
}

const statementSent = channel(STATEMENT_CHANNEL)

/**
 * A pool client that announces every statement it is given (one round trip each, unless pipelined
 * behind another) on STATEMENT_CHANNEL: the metrics count them; without a subscriber it costs one check.
 */
class CountingClient extends pg.Client {}
const send = pg.Client.prototype.query
// One wrapper stands for every overload of `query`: the arguments pass through untouched.
CountingClient.prototype.query = function query(this: pg.Client, ...args: unknown[]) {
  if (statementSent.hasSubscribers) statementSent.publish(undefined)
  return Reflect.apply(send, this, args)
} as typeof send

export function createPool(s: PgSettings): pg.Pool {
  const pool = new pg.Pool({
    ...clientConfig(s),
    max: s.poolSize,
    idleTimeoutMillis: 30_000,
    Client: CountingClient,
    // Statements that do not wait on each other's answers (a unit of work's BEGIN and its first
    // statement) are written together: one round trip, not one each. The server runs them in the
    // order sent; each still has its own answer or error.
    pipeline: true,
  })
  // An idle client that loses its server emits here; the pool drops it and makes a new one later.
  pool.on('error', () => {})
  // Units of work and the session cap (migration 012) are written for READ COMMITTED: each new
  // connection asks for it, whatever the database's or role's default, in a statement written
  // ahead of the one the connection was made for (pipelined: no round trip of its own). Part of
  // connecting, it is not counted among the statements the pool sends.
  pool.on('connect', (client) => {
    const set: Promise<unknown> = Reflect.apply(send, client, [READ_COMMITTED]) // pg's own query
    set.catch(() => {}) // a lost connection fails the statement behind it as well
  })
  return pool
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57014', // query_canceled (statement timeout)
  '53300', // too_many_connections
])

/** True when an error means "the database cannot be reached or did not answer in time". */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = 'code' in err ? err.code : undefined
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) {
    return true
  }
  // The last: a statement after the pool closed (a request still running when a forced shutdown
  // closed the store).
  return /timeout|terminated|Connection terminated|not queryable|ended|after calling end/i.test(
    err.message,
  )
}

/** The public field of each foreign key a request can break (PostgreSQL's default names). */
const REFERENCE_FIELDS: Record<string, string> = {
  auth_policy_signers_signer_id_fkey: 'primary.extJwt.allowedSigners',
  auth_policies_secondary_require_ext_jwt_signer_fkey: 'secondary.requireExtJwtSigner',
  identities_auth_policy_id_fkey: 'authPolicyId',
  signers_enroll_auth_policy_id_fkey: 'enrollAuthPolicyId',
}

/**
 * A foreign key broken by two requests at once, on two instances or one: a write naming an
 * entity that a concurrent DELETE removed (404, as when it was gone before), or a DELETE of an
 * entity that a concurrent write came to reference (409, as when it was referenced before). The
 * checks before the write saw neither; the database's keys keep the data whole.
 */
function referenceRace(err: Error): AppError {
  const constraint = 'constraint' in err && typeof err.constraint === 'string' ? err.constraint : ''
  const field = REFERENCE_FIELDS[constraint] ?? 'request'
  if (/^update or delete on table/.test(err.message)) {
    return new AppError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
      cause: { field, reason: 'another entity came to reference it meanwhile' },
    })
  }
  return new AppError('NOT_FOUND', {
    cause: { field, reason: 'the entity it names was deleted meanwhile' },
  })
}

/**
 * Turns an unreachable database into a 503 and a data exception (SQLSTATE class 22: a NUL in
 * text, a value out of range, an invalid date-time) into a 400, both in the error envelope; other
 * errors pass through. The driver's text is not forwarded: it may quote the value.
 */
export function unavailable(err: unknown): unknown {
  if (err instanceof AppError) return err
  const code = err instanceof Error && 'code' in err ? err.code : undefined
  if (code === '23503') return referenceRace(err as Error)
  if (typeof code === 'string' && code.startsWith('22')) {
    return new AppError('COULD_NOT_VALIDATE', {
      cause: {
        field: 'request',
        reason: `a value the database cannot store or compare (SQLSTATE ${code})`,
      },
    })
  }
  if (!isUnavailable(err)) return err
  return new AppError('SERVICE_UNAVAILABLE', {
    cause: { field: 'database', reason: 'the database does not answer; try again shortly' },
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Waits until the server answers, retrying with backoff (0.25 s doubling to 5 s) for at most
 * `connectTimeoutMs`; then throws an error whose message names the cause without the password.
 */
export async function waitForServer(
  s: PgSettings,
  onRetry?: (attempt: number, reason: string) => void,
): Promise<void> {
  const deadline = Date.now() + s.connectTimeoutMs
  let delay = 250
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client({
      ...clientConfig(s),
      connectionTimeoutMillis: Math.max(1000, Math.min(10_000, deadline - Date.now())),
    })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query('SELECT 1')
      await client.end()
      return
    } catch (err) {
      await client.end().catch(() => {})
      const reason = redactMessage(err instanceof Error ? err.message : String(err), s.url)
      if (!isUnavailable(err) || Date.now() + delay > deadline) {
        throw new Error(`CTRL_DB: cannot reach PostgreSQL at ${redactUrl(s.url)}: ${reason}`)
      }
      onRetry?.(attempt, reason)
      await sleep(delay)
      delay = Math.min(delay * 2, 5000)
    }
  }
}
