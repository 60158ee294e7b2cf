import { describe, expect, it } from 'vitest'
import { ConfigError, DEFAULT_CONFIG, loadConfig } from '../src/config.js'
import { durationProblem, formatDuration, GO_MAX_DURATION, parseDuration } from '../src/duration.js'

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({})
    expect(c).toEqual(DEFAULT_CONFIG)
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 1280,
      dbPath: 'data/controller.db',
      adminUser: 'admin',
      sessionTimeoutMs: 1_800_000,
      logLevel: 'info',
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      httpKeepAliveTimeoutMs: 5_000,
      auditRetentionMs: 720 * 3_600_000,
    })
  })

  it('reads every setting', () => {
    const c = loadConfig({
      CTRL_HOST: '0.0.0.0',
      CTRL_PORT: '0',
      CTRL_DB: ':memory:',
      CTRL_ADMIN_USER: 'root',
      CTRL_ADMIN_PASSWORD: 'a-long-password',
      CTRL_SESSION_TIMEOUT: '1h30m',
      CTRL_LOG_LEVEL: 'debug',
      CTRL_TLS_CERT: 'c.pem',
      CTRL_TLS_KEY: 'k.pem',
      CTRL_TLS_CA: 'ca.pem',
      CTRL_JWT_CLOCK_TOLERANCE: '0',
      CTRL_HTTP_HEADERS_TIMEOUT: '2s',
      CTRL_HTTP_REQUEST_TIMEOUT: '1m',
      CTRL_HTTP_KEEPALIVE_TIMEOUT: '500ms',
      CTRL_AUDIT_RETENTION: '48h',
    })
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 0,
      dbPath: ':memory:',
      adminUser: 'root',
      adminPassword: 'a-long-password',
      sessionTimeoutMs: 5_400_000,
      logLevel: 'debug',
      tlsCertPath: 'c.pem',
      tlsKeyPath: 'k.pem',
      tlsCaPath: 'ca.pem',
      jwtClockToleranceMs: 0,
      httpHeadersTimeoutMs: 2_000,
      httpRequestTimeoutMs: 60_000,
      httpKeepAliveTimeoutMs: 500,
      auditRetentionMs: 48 * 3_600_000,
    })
  })

  it('reads the trusted balancers, and refuses what is not an address or CIDR range', () => {
    expect(loadConfig({}).trustProxy).toEqual([])
    expect(
      loadConfig({ CTRL_TRUST_PROXY: ' 10.0.0.5, 10.1.0.0/16,fd00::/64 ,::1,::ffff:10.0.0.0/104' })
        .trustProxy,
    ).toEqual(['10.0.0.5', '10.1.0.0/16', 'fd00::/64', '::1', '::ffff:10.0.0.0/104'])
    for (const bad of [
      'true',
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0.1/8/8',
      'lb.example',
      '10.0.0/8',
      '0.0.0.0/0', // every client would name its own address
      '::/0',
      '10.0.0.0/00',
      '0.0.0.0/1', // with 128.0.0.0/1, everyone again
      '128.0.0.0/7',
      'fd00::/31',
      '::ffff:0.0.0.0/96', // every IPv4 client, as the IPv4 range 0.0.0.0/0
      '::ffff:0:0/100',
    ]) {
      expect(() => loadConfig({ CTRL_TRUST_PROXY: bad }), bad).toThrow(ConfigError)
      expect(() => loadConfig({ CTRL_TRUST_PROXY: bad }), bad).toThrow(/CTRL_TRUST_PROXY/)
    }
  })

  it('reads the controllers-list settings', () => {
    expect(loadConfig({})).toMatchObject({
      instanceName: undefined,
      advertiseUrl: undefined,
      heartbeatMs: 5_000,
    })
    expect(
      loadConfig({
        CTRL_INSTANCE_NAME: 'ctrl-1',
        CTRL_ADVERTISE_URL: 'https://ctrl-1.example:1280/',
        CTRL_HEARTBEAT_INTERVAL: '2s',
      }),
    ).toMatchObject({
      instanceName: 'ctrl-1',
      advertiseUrl: 'https://ctrl-1.example:1280',
      heartbeatMs: 2_000,
    })
  })

  it('reads the PostgreSQL settings', () => {
    const c = loadConfig({
      CTRL_DB: 'postgresql://ctrl:secret@db.internal:5433/ctrl?sslmode=require',
      CTRL_DB_POOL: '25',
      CTRL_DB_CONNECT_TIMEOUT: '1m',
      CTRL_DB_STATEMENT_TIMEOUT: '750ms',
    })
    expect(c).toMatchObject({
      dbPath: 'postgresql://ctrl:secret@db.internal:5433/ctrl?sslmode=require',
      dbPoolSize: 25,
      dbConnectTimeoutMs: 60_000,
      dbStatementTimeoutMs: 750,
    })
    expect(loadConfig({})).toMatchObject({
      dbPoolSize: 10,
      dbConnectTimeoutMs: 30_000,
      dbStatementTimeoutMs: 5_000,
    })
  })

  it.each([
    ['CTRL_PORT', '70000'],
    ['CTRL_PORT', 'http'],
    ['CTRL_SESSION_TIMEOUT', '10'],
    ['CTRL_SESSION_TIMEOUT', '1d'],
    ['CTRL_SESSION_TIMEOUT', '0'],
    ['CTRL_SESSION_TIMEOUT', '-5m'],
    ['CTRL_LOG_LEVEL', 'loud'],
    ['CTRL_TLS_CERT', 'only-cert.pem'],
    ['CTRL_TLS_CA', 'ca-without-tls.pem'],
    ['CTRL_ADMIN_PASSWORD', 'short'],
    ['CTRL_JWKS_ALLOW_HTTP', 'maybe'],
    ['CTRL_HTTP_HEADERS_TIMEOUT', '10'],
    ['CTRL_HTTP_HEADERS_TIMEOUT', '0'],
    ['CTRL_HTTP_HEADERS_TIMEOUT', '1m'],
    ['CTRL_HTTP_REQUEST_TIMEOUT', '-1s'],
    ['CTRL_HTTP_REQUEST_TIMEOUT', '0s'],
    ['CTRL_HTTP_REQUEST_TIMEOUT', '5s'],
    ['CTRL_HTTP_KEEPALIVE_TIMEOUT', 'soon'],
    ['CTRL_HTTP_KEEPALIVE_TIMEOUT', '0'],
    ['CTRL_DB_POOL', '0'],
    ['CTRL_DB_POOL', 'ten'],
    ['CTRL_DB_CONNECT_TIMEOUT', '30'],
    ['CTRL_DB_STATEMENT_TIMEOUT', '0s'],
    ['CTRL_AUDIT_RETENTION', '30d'],
    ['CTRL_AUDIT_RETENTION', '0'],
    ['CTRL_ENROLL_CA_CERT', 'only-cert.pem'],
    ['CTRL_ENROLL_CA_KEY', 'only-key.pem'],
    ['CTRL_ENROLL_CERT_VALIDITY', '1y'],
    ['CTRL_CLIENT_SIGNER_FIELDS', 'all'],
    ['CTRL_HEARTBEAT_INTERVAL', '0s'],
    ['CTRL_HEARTBEAT_INTERVAL', 'often'],
    ['CTRL_ADVERTISE_URL', 'ctrl-1.example:1280'],
    ['CTRL_ADVERTISE_URL', 'ftp://ctrl-1.example'],
    ['CTRL_INSTANCE_NAME', 'x'.repeat(256)],
    ['CTRL_PASSWORD_SCRYPT_N', '1000'],
    ['CTRL_PASSWORD_SCRYPT_N', '262144'],
  ])('refuses %s=%s with an error naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}`))
  })
})

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['2s', 2000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['5us', 0.005],
    ['0', 0],
  ])('reads %s', (text, ms) => expect(parseDuration(text)).toBe(ms))

  it.each(['10', '1d', '30S', '', 'm', '1h 30m', '.', '.s', '1e3s', '00'])('refuses %s', (text) => {
    expect(parseDuration(text)).toBeUndefined()
  })

  it('reads in whole nanoseconds up to what Go holds, as time.ParseDuration does', () => {
    expect(parseDuration('0.0000000001s')).toBe(0)
    expect(parseDuration('1.5ns')).toBe(0.000001)
    expect(parseDuration('2562047h')).toBe(2562047 * 3_600_000)
    expect(parseDuration('2562047h47m16.854775807s')).toBeDefined()
    for (const over of [
      '2562048h',
      '2562047h47m16.854775808s',
      '9999999999h',
      '99999999999999999999ns',
    ])
      expect(parseDuration(over), over).toBeUndefined()
    expect(parseDuration('-2562047h47m16.854775808s')).toBeDefined()
    expect(durationProblem('2562048h')).toBe('overflow')
    expect(durationProblem('1d')).toBe('syntax')
    expect(durationProblem(GO_MAX_DURATION)).toBeUndefined()
    // The controller's own durations (token rules) are not bound by Go's limit.
    expect(parseDuration('3000000h', { goLimit: false })).toBe(3_000_000 * 3_600_000)
    expect(parseDuration('3000000x', { goLimit: false })).toBeUndefined()
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [0.000001, '1ns'],
    [0.0015, '1.5us'],
    [0.5, '500us'],
    [250, '250ms'],
    [1.5, '1.5ms'],
    [1500, '1.5s'],
    [80_000, '1m20s'],
    [5_400_000, '1h30m'],
    [3_600_000.000001, '1h0.000000001s'],
    [-5000, '-5s'],
  ])('writes %s ms as %s', (ms, text) => expect(formatDuration(ms)).toBe(text))

  it('writes the largest Go duration as itself, though a double cannot hold its nanoseconds', () => {
    const ms = parseDuration(GO_MAX_DURATION)
    expect(ms).toBeDefined()
    expect(formatDuration(ms ?? 0)).toBe(GO_MAX_DURATION)
    expect(parseDuration(formatDuration(parseDuration('2562047h') ?? 0))).toBeDefined()
  })

  it('writes what parseDuration reads back to the same nanoseconds, never an exponent', () => {
    for (const text of [
      '0.0000000001s',
      '1ns',
      '999ns',
      '1.000001ms',
      '1h0.000000001s',
      '59m59.999s',
    ]) {
      const ms = parseDuration(text)
      if (ms === undefined) throw new Error(text)
      const written = formatDuration(ms)
      expect(written).not.toMatch(/e/)
      expect(parseDuration(written)).toBeCloseTo(ms, 9)
    }
  })
})
