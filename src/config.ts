import { parseDuration } from './duration.js'

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
  /** Requests per second per client address on the authenticate routes; 0 is off. */
  authRateLimit: number
  /** Time a client has to send a request head, its whole request, and idle between requests. */
  httpHeadersTimeoutMs: number
  httpRequestTimeoutMs: number
  httpKeepAliveTimeoutMs: number
  /** How long audit events are kept before the purge removes them. */
  auditRetentionMs: number
  /** The Prometheus metrics listener: off when the port is undefined; 0 picks a free port. */
  metricsPort: number | undefined
  metricsHost: string
  /** SIGTERM: how long readiness fails while every route keeps serving, then the drain's bound. */
  shutdownDelayMs: number
  shutdownTimeoutMs: number
  /** This instance in the controllers list: its name (default host:port) and advertised API URL. */
  instanceName: string | undefined
  advertiseUrl: string | undefined
  /** How often this instance refreshes its heartbeat in the controllers list. */
  heartbeatMs: number
}

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
  jwtClockToleranceMs: 30_000,
  jwksCooldownMs: 5_000,
  jwksMaxAgeMs: 10 * 60_000,
  jwksAllowHttp: true,
  jwksBlockPrivate: false,
  authRateLimit: 0,
  httpHeadersTimeoutMs: 10_000,
  httpRequestTimeoutMs: 30_000,
  httpKeepAliveTimeoutMs: 5_000,
  auditRetentionMs: 720 * 3_600_000,
  metricsPort: undefined,
  metricsHost: '127.0.0.1',
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

/** Validates the environment and returns the settings; throws ConfigError on the first bad value. */
export function loadConfig(env: Env): Config {
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
