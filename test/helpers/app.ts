import type { FastifyInstance } from 'fastify'
import { beforeEach, describe, onTestFinished } from 'vitest'
import { type BuildAppOptions, buildApp } from '../../src/app.js'
import { type Config, DEFAULT_CONFIG } from '../../src/config.js'
import { freshPostgresUrl, STORES, type StoreKind } from './stores.js'

export const ADMIN_USER = 'admin'
export const ADMIN_PASSWORD = 'admin-password-123'

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...DEFAULT_CONFIG,
    dbPath: ':memory:',
    adminUser: ADMIN_USER,
    adminPassword: ADMIN_PASSWORD,
    logLevel: 'silent',
    // Tests log in many times a second from one address; the limits' own tests turn them on.
    authRateLimit: 0,
    authIdentityRateLimit: 0,
    ...overrides,
  }
}

/** A clock the test moves by hand. */
export function testClock(start = '2026-11-22T08:00:00.000Z') {
  let now = Date.parse(start)
  const clock = () => new Date(now)
  clock.advance = (ms: number) => {
    now += ms
  }
  clock.set = (iso: string) => {
    now = Date.parse(iso)
  }
  return clock
}

/** Names JWKS fetches tried to resolve; tests never resolve a name outside loopback. */
export const refusedNames: string[] = []

/**
 * The resolver every test app gets unless a test injects its own: `localhost` only. Signers with
 * example hostnames make the app fetch in the background; this keeps those fetches from sending
 * a DNS query, or anything else, off the machine.
 */
export const loopbackOnlyResolver = async (hostname: string) => {
  if (hostname === 'localhost') return [{ address: '127.0.0.1', family: 4 }]
  refusedNames.push(hostname)
  throw new Error(`tests resolve no names (${hostname})`)
}

let currentKind: StoreKind = 'sqlite'

/**
 * Runs a suite once per store (SQLite, and PostgreSQL when CTRL_TEST_POSTGRES_URL is set): every
 * buildTestApp inside builds on that store.
 */
export function forEachStore(suite: (kind: StoreKind) => void): void {
  describe.each(STORES)('on %s', (kind) => {
    beforeEach(() => {
      currentKind = kind
    })
    suite(kind)
  })
}

/**
 * The real app on a fresh database (SQLite in memory, or this file's PostgreSQL database emptied),
 * closed when the test ends; with `keepOpen`, by the caller (the afterAll of a describe whose
 * tests share it).
 */
export async function buildTestApp(
  options: Partial<Omit<BuildAppOptions, 'config'>> & {
    config?: Partial<Config>
    storeKind?: StoreKind
    keepOpen?: boolean
  } = {},
): Promise<FastifyInstance> {
  const { config, storeKind = currentKind, keepOpen = false, ...rest } = options
  const dbPath = storeKind === 'postgres' ? await freshPostgresUrl() : ':memory:'
  const app = await buildApp({
    logger: false,
    resolver: loopbackOnlyResolver,
    ...rest,
    config: testConfig({ dbPath, dbPoolSize: 4, ...config }),
  })
  if (!keepOpen) onTestFinished(() => app.close())
  return app
}

/** Logs in with a password and returns the session token. */
export async function login(
  app: FastifyInstance,
  username = ADMIN_USER,
  password = ADMIN_PASSWORD,
): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/edge/management/v1/authenticate?method=password',
    payload: { username, password },
  })
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`)
  return res.headers['zt-session'] as string
}

/** Calls routes of the app with a session token (and optional extra headers). */
export function caller(app: FastifyInstance, token: string) {
  return (method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) =>
    app.inject({
      method: method as 'GET', // inject takes the method names as a union; tests pass them as text
      url,
      headers: { 'zt-session': token, ...headers },
      ...(payload === undefined ? {} : { payload: payload as object }),
    })
}

/** `{"a":{"a":…"x"…}}` nested `depth` levels, as text (JSON.stringify itself would overflow). */
export function deepJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}"x"${'}'.repeat(depth)}`
}

/** Sends a raw JSON text body. */
export function sendJson(
  app: FastifyInstance,
  token: string,
  method: 'POST' | 'PUT' | 'PATCH',
  url: string,
  body: string,
) {
  return app.inject({
    method,
    url,
    headers: { 'zt-session': token, 'content-type': 'application/json' },
    payload: body,
  })
}
