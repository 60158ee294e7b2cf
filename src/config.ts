import { isIP } from 'node:net'
import { parseDuration } from './duration.js'
import { scryptCost } from './identities/password.js'
import { ipv6Bytes } from './jwt/ipv6-embedded.js'

/** The validated operator settings of the controller. Durations are in milliseconds. */
export interface Config {
  host: string
  port: number
  /** A SQLite file, `:memory:`, or a postgres:// URL. */
  dbPath: string
  /** PostgreSQL: connections per instance, start-up retry time and statement timeout. */
  dbPoolSize: number
  dbConnectTimeoutMs: number
  dbStatementTimeoutMs: number
  adminUser: string
  adminPassword: string | undefined
  sessionTimeoutMs: number
  logLevel: LogLevel
  tlsCertPath: string | undefined
  tlsKeyPath: string | undefined
  /** PEM bundle that `/.well-known/est/cacerts` offers; unset: the chain in the certificate file. */
  tlsCaPath: string | undefined
  jwtClockToleranceMs: number
  jwksCooldownMs: number
  jwksMaxAgeMs: number
  jwksAllowHttp: boolean
  jwksBlockPrivate: boolean
  /** Logins per second per client address (token bucket, shared by both APIs); 0 is off. */
  authRateLimit: number
  /**
   * Addresses or CIDR ranges of the load balancers whose `X-Forwarded-For` names the client (its
   * address then counts for the login limits, the access log and the session); empty: none.
   */
  trustProxy: string[]
  /** Logins per second per identity or password user name; 0 is off. */
  authIdentityRateLimit: number
  /** Live API sessions one identity keeps at most; a login beyond ends its oldest. */
  maxSessionsPerIdentity: number
  /** Consecutive failed password logins of one user name before its backoff; 0 is off. */
  loginLockoutAttempts: number
  /** The longest backoff interval (it starts at 1 s and doubles). */
  loginLockoutMaxMs: number
  /** Time a client has to send a request head, its whole request, and idle between requests. */
  httpHeadersTimeoutMs: number
  httpRequestTimeoutMs: number
  httpKeepAliveTimeoutMs: number
  /** How long audit events are kept before the purge removes them. */
  auditRetentionMs: number
  /** The Prometheus metrics listener: off when the port is undefined; 0 picks a free port. */
  metricsPort: number | undefined
  metricsHost: string
  /** A folder holding OpenZiti's admin console build, served at `/zac/`; unset: not served. */
  consoleDir: string | undefined
  /** Exact origins (`https://host:port`) whose browsers may call the APIs; empty: no CORS. */
  corsOrigins: string[]
  /** PEM files of the CA that signs enrolling identities' CSRs; unset: CSRs are refused. */
  enrollCaCertPath: string | undefined
  enrollCaKeyPath: string | undefined
  enrollCertValidityMs: number
  /** What the unauthenticated client signer list shows: the seed's fields, or OpenZiti's. */
  clientSignerFields: ClientSignerFields
  /** Where database snapshots go; unset: `snapshots` beside the SQLite file. */
  snapshotDir: string | undefined
  /** Snapshots kept (the oldest removed after a new one). */
  snapshotKeep: number
  /** SIGTERM: how long readiness fails while every route keeps serving, then the drain's bound. */
  shutdownDelayMs: number
  shutdownTimeoutMs: number
  /** This instance in the controllers list: its name (default host:port) and advertised API URL. */
  instanceName: string | undefined
  advertiseUrl: string | undefined
  /** How often this instance refreshes its heartbeat in the controllers list. */
  heartbeatMs: number
}

export const CLIENT_SIGNER_FIELDS = ['seed', 'openziti'] as const
export type ClientSignerFields = (typeof CLIENT_SIGNER_FIELDS)[number]

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** A bad setting: the message names the variable and what is wrong with it. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

export const DEFAULT_CONFIG: Config = {
  host: '127.0.0.1',
  port: 1280,
  dbPath: 'data/controller.db',
  dbPoolSize: 10,
  dbConnectTimeoutMs: 30_000,
  dbStatementTimeoutMs: 5_000,
  adminUser: 'admin',
  adminPassword: undefined,
  sessionTimeoutMs: 30 * 60_000,
  logLevel: 'info',
  tlsCertPath: undefined,
  tlsKeyPath: undefined,
  tlsCaPath: undefined,
  jwtClockToleranceMs: 0,
  jwksCooldownMs: 5_000,
  jwksMaxAgeMs: 10 * 60_000,
  jwksAllowHttp: true,
  jwksBlockPrivate: false,
  authRateLimit: 20,
  authIdentityRateLimit: 5,
  maxSessionsPerIdentity: 100,
  loginLockoutAttempts: 10,
  loginLockoutMaxMs: 15 * 60_000,
  httpHeadersTimeoutMs: 10_000,
  httpRequestTimeoutMs: 30_000,
  httpKeepAliveTimeoutMs: 5_000,
  auditRetentionMs: 720 * 3_600_000,
  metricsPort: undefined,
  metricsHost: '127.0.0.1',
  consoleDir: undefined,
  corsOrigins: [],
  trustProxy: [],
  enrollCaCertPath: undefined,
  enrollCaKeyPath: undefined,
  enrollCertValidityMs: 365 * 24 * 3_600_000,
  clientSignerFields: 'seed',
  snapshotDir: undefined,
  snapshotKeep: 7,
  shutdownDelayMs: 5_000,
  shutdownTimeoutMs: 25_000,
  instanceName: undefined,
  advertiseUrl: undefined,
  heartbeatMs: 5_000,
}

type Env = Record<string, string | undefined>

function read(env: Env, name: string): string | undefined {
  const v = env[name]
  return v === undefined || v.trim() === '' ? undefined : v.trim()
}

function duration(env: Env, name: string, fallback: number, allowZero = false): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  const ms = parseDuration(raw)
  if (ms === undefined) {
    throw new ConfigError(
      `${name}: "${raw}" is not a duration (use Go syntax such as 500ms, 2s, 5m, 1h)`,
    )
  }
  if (ms < 0 || (ms === 0 && !allowZero)) {
    throw new ConfigError(
      `${name}: must be ${allowZero ? 'zero or positive' : 'positive'}, got "${raw}"`,
    )
  }
  return ms
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name}: must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  const v = raw.toLowerCase()
  if (['true', '1', 'yes', 'on'].includes(v)) return true
  if (['false', '0', 'no', 'off'].includes(v)) return false
  throw new ConfigError(`${name}: must be true or false, got "${raw}"`)
}

/** A comma-separated setting's entries, trimmed, empty ones left out; none when unset. */
function commaList(env: Env, name: string): string[] {
  const raw = read(env, name)
  if (raw === undefined) return []
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
}

/**
 * `CTRL_CORS_ORIGINS`: comma-separated exact origins. `*` is refused: the `zt-session` header is
 * exposed to the origins listed, and a session token must never be readable by any site.
 */
function origins(env: Env): string[] {
  const list = commaList(env, 'CTRL_CORS_ORIGINS')
  for (const o of list) {
    if (o.includes('*')) {
      throw new ConfigError(
        'CTRL_CORS_ORIGINS: "*" is refused (it would let any site read session tokens); list exact origins',
      )
    }
    let origin: string | undefined
    try {
      origin = new URL(o).origin
    } catch {
      origin = undefined
    }
    if (origin !== o || !/^https?:/.test(o)) {
      throw new ConfigError(
        `CTRL_CORS_ORIGINS: "${o}" is not an origin (scheme://host[:port], no path or trailing slash)`,
      )
    }
  }
  return list
}

/** `::ffff:a.b.c.d` in any of its spellings. */
function isMappedIpv4(address: string): boolean {
  const bytes = ipv6Bytes(address)
  return (
    bytes?.slice(0, 10).every((b) => b === 0) === true && bytes[10] === 0xff && bytes[11] === 0xff
  )
}

/**
 * `CTRL_TRUST_PROXY`: comma-separated addresses or CIDR ranges (`10.0.0.5`, `10.0.0.0/24`,
 * `fd00::/64`) of the balancers in front. Only a hop from one of them is believed about the client.
 */
function trustedProxies(env: Env): string[] {
  const list = commaList(env, 'CTRL_TRUST_PROXY')
  for (const entry of list) {
    const [address = '', prefix, extra] = entry.split('/')
    const family = isIP(address)
    const bits = family === 4 ? 32 : 128
    const okPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)
    if (family === 0 || !okPrefix || extra !== undefined) {
      throw new ConfigError(
        `CTRL_TRUST_PROXY: "${entry}" is not an IP address or CIDR range (such as 10.0.0.5 or 10.0.0.0/24)`,
      )
    }
    // Shorter than a /8 (IPv4) or a /32 (IPv6, an ISP's allocation): a range of clients, not of
    // balancers (`0.0.0.0/1,128.0.0.0/1` is everyone, as /0 is). An IPv4-mapped range
    // (`::ffff:0:0/96`) matches IPv4 clients as the IPv4 range of its last 32 bits.
    const mapped = family === 6 && isMappedIpv4(address)
    const shortest = family === 4 ? 8 : mapped ? 96 + 8 : 32
    if (prefix !== undefined && Number(prefix) < shortest) {
      throw new ConfigError(
        `CTRL_TRUST_PROXY: "${entry}" would trust every client to name its own address; list the balancers' addresses or ranges (at least /8 for IPv4, /32 for IPv6)`,
      )
    }
  }
  return list
}

/** Validates the environment and returns the settings; throws ConfigError on the first bad value. */
export function loadConfig(env: Env): Config {
  try {
    scryptCost(read(env, 'CTRL_PASSWORD_SCRYPT_N')) // read by the password module itself
  } catch (e) {
    throw new ConfigError(e instanceof Error ? e.message : String(e))
  }
  const level = read(env, 'CTRL_LOG_LEVEL') ?? DEFAULT_CONFIG.logLevel
  const logLevel = LOG_LEVELS.find((l) => l === level)
  if (logLevel === undefined) {
    throw new ConfigError(`CTRL_LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`)
  }
  const tlsCertPath = read(env, 'CTRL_TLS_CERT')
  const tlsKeyPath = read(env, 'CTRL_TLS_KEY')
  if ((tlsCertPath === undefined) !== (tlsKeyPath === undefined)) {
    const [set, missing] =
      tlsCertPath === undefined
        ? ['CTRL_TLS_KEY', 'CTRL_TLS_CERT']
        : ['CTRL_TLS_CERT', 'CTRL_TLS_KEY']
    throw new ConfigError(`${set}: needs ${missing} as well to serve HTTPS`)
  }
  const tlsCaPath = read(env, 'CTRL_TLS_CA')
  if (tlsCaPath !== undefined && tlsCertPath === undefined) {
    throw new ConfigError('CTRL_TLS_CA: applies only with CTRL_TLS_CERT and CTRL_TLS_KEY (HTTPS)')
  }
  const adminUser = read(env, 'CTRL_ADMIN_USER') ?? DEFAULT_CONFIG.adminUser
  if (adminUser.length > 255) throw new ConfigError('CTRL_ADMIN_USER: at most 255 characters')
  const adminPassword = env.CTRL_ADMIN_PASSWORD === '' ? undefined : env.CTRL_ADMIN_PASSWORD
  if (adminPassword !== undefined && adminPassword.length < 12) {
    throw new ConfigError('CTRL_ADMIN_PASSWORD: must be at least 12 characters')
  }
  const httpHeadersTimeoutMs = duration(
    env,
    'CTRL_HTTP_HEADERS_TIMEOUT',
    DEFAULT_CONFIG.httpHeadersTimeoutMs,
  )
  const httpRequestTimeoutMs = duration(
    env,
    'CTRL_HTTP_REQUEST_TIMEOUT',
    DEFAULT_CONFIG.httpRequestTimeoutMs,
  )
  // Node refuses a server whose head may take longer than the whole request.
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    const [name, other] =
      read(env, 'CTRL_HTTP_REQUEST_TIMEOUT') === undefined
        ? ['CTRL_HTTP_HEADERS_TIMEOUT', 'at most CTRL_HTTP_REQUEST_TIMEOUT']
        : ['CTRL_HTTP_REQUEST_TIMEOUT', 'at least CTRL_HTTP_HEADERS_TIMEOUT']
    throw new ConfigError(
      `${name}: must be ${other} (headers ${httpHeadersTimeoutMs} ms, request ${httpRequestTimeoutMs} ms)`,
    )
  }
  const port = integer(env, 'CTRL_PORT', DEFAULT_CONFIG.port, 0, 65535)
  const metricsPort =
    read(env, 'CTRL_METRICS_PORT') === undefined
      ? undefined
      : integer(env, 'CTRL_METRICS_PORT', 0, 0, 65535)
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError(`CTRL_METRICS_PORT: must differ from CTRL_PORT (${port})`)
  }
  const enrollCaCertPath = read(env, 'CTRL_ENROLL_CA_CERT')
  const enrollCaKeyPath = read(env, 'CTRL_ENROLL_CA_KEY')
  if ((enrollCaCertPath === undefined) !== (enrollCaKeyPath === undefined)) {
    const [set, missing] =
      enrollCaCertPath === undefined
        ? ['CTRL_ENROLL_CA_KEY', 'CTRL_ENROLL_CA_CERT']
        : ['CTRL_ENROLL_CA_CERT', 'CTRL_ENROLL_CA_KEY']
    throw new ConfigError(`${set}: needs ${missing} as well to sign enrollment CSRs`)
  }
  const fields = read(env, 'CTRL_CLIENT_SIGNER_FIELDS') ?? DEFAULT_CONFIG.clientSignerFields
  const clientSignerFields = CLIENT_SIGNER_FIELDS.find((f) => f === fields)
  if (clientSignerFields === undefined) {
    throw new ConfigError(`CTRL_CLIENT_SIGNER_FIELDS: must be seed or openziti, got "${fields}"`)
  }
  return {
    host: read(env, 'CTRL_HOST') ?? DEFAULT_CONFIG.host,
    port,
    dbPath: read(env, 'CTRL_DB') ?? DEFAULT_CONFIG.dbPath,
    dbPoolSize: integer(env, 'CTRL_DB_POOL', DEFAULT_CONFIG.dbPoolSize, 1, 1000),
    dbConnectTimeoutMs: duration(
      env,
      'CTRL_DB_CONNECT_TIMEOUT',
      DEFAULT_CONFIG.dbConnectTimeoutMs,
      true,
    ),
    dbStatementTimeoutMs: duration(
      env,
      'CTRL_DB_STATEMENT_TIMEOUT',
      DEFAULT_CONFIG.dbStatementTimeoutMs,
    ),
    adminUser,
    adminPassword,
    sessionTimeoutMs: duration(env, 'CTRL_SESSION_TIMEOUT', DEFAULT_CONFIG.sessionTimeoutMs),
    logLevel,
    tlsCertPath,
    tlsKeyPath,
    tlsCaPath,
    jwtClockToleranceMs: duration(
      env,
      'CTRL_JWT_CLOCK_TOLERANCE',
      DEFAULT_CONFIG.jwtClockToleranceMs,
      true,
    ),
    jwksCooldownMs: duration(env, 'CTRL_JWKS_COOLDOWN', DEFAULT_CONFIG.jwksCooldownMs, true),
    jwksMaxAgeMs: duration(env, 'CTRL_JWKS_MAX_AGE', DEFAULT_CONFIG.jwksMaxAgeMs),
    jwksAllowHttp: boolean(env, 'CTRL_JWKS_ALLOW_HTTP', DEFAULT_CONFIG.jwksAllowHttp),
    jwksBlockPrivate: boolean(env, 'CTRL_JWKS_BLOCK_PRIVATE', DEFAULT_CONFIG.jwksBlockPrivate),
    authRateLimit: integer(env, 'CTRL_AUTH_RATE_LIMIT', DEFAULT_CONFIG.authRateLimit, 0, 1_000_000),
    trustProxy: trustedProxies(env),
    authIdentityRateLimit: integer(
      env,
      'CTRL_AUTH_IDENTITY_RATE_LIMIT',
      DEFAULT_CONFIG.authIdentityRateLimit,
      0,
      1_000_000,
    ),
    maxSessionsPerIdentity: integer(
      env,
      'CTRL_MAX_SESSIONS_PER_IDENTITY',
      DEFAULT_CONFIG.maxSessionsPerIdentity,
      1,
      1_000_000,
    ),
    loginLockoutAttempts: integer(
      env,
      'CTRL_LOGIN_LOCKOUT_ATTEMPTS',
      DEFAULT_CONFIG.loginLockoutAttempts,
      0,
      1_000_000,
    ),
    loginLockoutMaxMs: duration(env, 'CTRL_LOGIN_LOCKOUT_MAX', DEFAULT_CONFIG.loginLockoutMaxMs),
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    httpKeepAliveTimeoutMs: duration(
      env,
      'CTRL_HTTP_KEEPALIVE_TIMEOUT',
      DEFAULT_CONFIG.httpKeepAliveTimeoutMs,
    ),
    auditRetentionMs: duration(env, 'CTRL_AUDIT_RETENTION', DEFAULT_CONFIG.auditRetentionMs),
    metricsPort,
    metricsHost: read(env, 'CTRL_METRICS_HOST') ?? DEFAULT_CONFIG.metricsHost,
    consoleDir: read(env, 'CTRL_CONSOLE_DIR'),
    corsOrigins: origins(env),
    enrollCaCertPath,
    enrollCaKeyPath,
    enrollCertValidityMs: duration(
      env,
      'CTRL_ENROLL_CERT_VALIDITY',
      DEFAULT_CONFIG.enrollCertValidityMs,
    ),
    clientSignerFields,
    snapshotDir: read(env, 'CTRL_SNAPSHOT_DIR'),
    snapshotKeep: integer(env, 'CTRL_SNAPSHOT_KEEP', DEFAULT_CONFIG.snapshotKeep, 1, 10_000),
    shutdownDelayMs: duration(env, 'CTRL_SHUTDOWN_DELAY', DEFAULT_CONFIG.shutdownDelayMs, true),
    shutdownTimeoutMs: duration(env, 'CTRL_SHUTDOWN_TIMEOUT', DEFAULT_CONFIG.shutdownTimeoutMs),
    instanceName: instanceName(env),
    advertiseUrl: advertiseUrl(env),
    heartbeatMs: duration(env, 'CTRL_HEARTBEAT_INTERVAL', DEFAULT_CONFIG.heartbeatMs),
  }
}

function instanceName(env: Env): string | undefined {
  const name = read(env, 'CTRL_INSTANCE_NAME')
  if (name !== undefined && name.length > 255) {
    throw new ConfigError('CTRL_INSTANCE_NAME: at most 255 characters')
  }
  return name
}

function advertiseUrl(env: Env): string | undefined {
  const raw = read(env, 'CTRL_ADVERTISE_URL')
  if (raw === undefined) return undefined
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(`CTRL_ADVERTISE_URL: must be an http or https URL, got "${raw}"`)
  }
  return raw.replace(/\/+$/, '')
}
