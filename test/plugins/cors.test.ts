import { request as httpRequest } from 'node:http'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'
import { ADMIN_PASSWORD, ADMIN_USER, buildTestApp, caller, login } from '../helpers/app.js'
import { runToExit } from '../helpers/server-process.js'
import { listedSigner } from '../helpers/signers.js'
import { listen } from '../http/raw-http.js'

// A console on another origin (CTRL_CORS_ORIGINS): a listed origin's browser may call the APIs
// and read the session header; any other origin gets no CORS header.

const CONSOLE = 'https://console.example:8443'
const M = '/edge/management/v1'
const CLIENT_LIST = '/edge/client/v1/external-jwt-signers'

const preflight = (origin: string, method = 'POST') => ({
  method: 'OPTIONS' as const,
  url: `${M}/authenticate?method=password`,
  headers: {
    origin,
    'access-control-request-method': method,
    'access-control-request-headers': 'content-type,zt-session',
  },
})

const corsHeaders = (headers: Record<string, unknown>) =>
  Object.keys(headers).filter((h) => h.startsWith('access-control-'))

describe('CORS (CTRL_CORS_ORIGINS)', () => {
  it('answers a listed origin: preflight and answers, zt-session exposed', async () => {
    const app = await buildTestApp({ config: { corsOrigins: [CONSOLE, 'http://127.0.0.1:4200'] } })
    const pre = await app.inject(preflight(CONSOLE))
    expect(pre.statusCode).toBe(204)
    expect(pre.headers).toMatchObject({
      'access-control-allow-origin': CONSOLE,
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
      'access-control-allow-headers':
        'content-type, zt-session, authorization, if-none-match, ziti-token-issuer-id',
    })
    expect(pre.headers.vary).toContain('Origin')
    const res = await app.inject({
      method: 'POST',
      url: `${M}/authenticate?method=password`,
      headers: { origin: CONSOLE },
      payload: { username: ADMIN_USER, password: ADMIN_PASSWORD },
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBe(CONSOLE)
    expect(res.headers['access-control-expose-headers']).toBe(
      'zt-session, expiration-seconds, expires-at, www-authenticate, etag, retry-after',
    )
    expect(res.headers['zt-session']).toBeDefined()
    // An error in the envelope carries them too: the console reads its code.
    const denied = await app.inject({
      method: 'GET',
      url: `${M}/identities`,
      headers: { origin: CONSOLE },
    })
    expect(denied.statusCode).toBe(401)
    expect(denied.headers['access-control-allow-origin']).toBe(CONSOLE)
  })

  it('gives an unlisted origin no CORS header at all, and its preflight 404', async () => {
    const app = await buildTestApp({ config: { corsOrigins: [CONSOLE] } })
    for (const origin of [
      'https://evil.example',
      `${CONSOLE}.evil.example`,
      'null',
      'https://console.example',
    ]) {
      const pre = await app.inject(preflight(origin))
      expect(pre.statusCode, origin).toBe(404)
      expect(pre.json().error.code).toBe('NOT_FOUND')
      expect(corsHeaders(pre.headers), origin).toEqual([])
      const res = await app.inject({ method: 'GET', url: `${M}/version`, headers: { origin } })
      expect(res.statusCode).toBe(200)
      expect(corsHeaders(res.headers), origin).toEqual([])
    }
  })

  it('is off when unset: no CORS header, OPTIONS 404 as before', async () => {
    const app = await buildTestApp()
    const pre = await app.inject(preflight(CONSOLE))
    expect(pre.statusCode).toBe(404)
    expect(corsHeaders(pre.headers)).toEqual([])
    const res = await app.inject({ method: 'GET', url: '/version', headers: { origin: CONSOLE } })
    expect(corsHeaders(res.headers)).toEqual([])
  })

  it('keeps the client list lane: an Origin request gets the route with its CORS headers', async () => {
    const app = await buildTestApp({ storeKind: 'sqlite', config: { corsOrigins: [CONSOLE] } })
    const port = await listen(app)
    await caller(app, await login(app))('POST', `${M}/external-jwt-signers`, listedSigner('one'))
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
        (resolve, reject) => {
          const req = httpRequest(
            { host: '127.0.0.1', port, path: CLIENT_LIST, headers },
            (res) => {
              let body = ''
              res.on('data', (c) => {
                body += c
              })
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, headers: res.headers, body }),
              )
            },
          )
          req.on('error', reject)
          req.end()
        },
      )
    const plain = await get({})
    const kept = await get({}) // the lane, once the page is kept
    const cors = await get({ origin: CONSOLE })
    const other = await get({ origin: 'https://evil.example' })
    for (const a of [plain, kept, cors, other]) {
      expect(a.status).toBe(200)
      expect(a.body).toBe(plain.body)
      expect(a.headers.vary).toContain('Origin')
    }
    expect(cors.headers['access-control-allow-origin']).toBe(CONSOLE)
    expect(corsHeaders(kept.headers)).toEqual([])
    expect(corsHeaders(other.headers)).toEqual([])
  })

  it('refuses "*" and anything but exact origins in the setting', () => {
    for (const value of [
      '*',
      `${CONSOLE},*`,
      'https://*.example',
      'console.example',
      `${CONSOLE}/`,
      'ftp://x',
    ]) {
      expect(() => loadConfig({ CTRL_CORS_ORIGINS: value }), value).toThrow(ConfigError)
    }
    expect(
      loadConfig({ CTRL_CORS_ORIGINS: ` ${CONSOLE} , http://localhost:4200 ` }).corsOrigins,
    ).toEqual([CONSOLE, 'http://localhost:4200'])
  })

  it('the built server refuses to start on "*" or a missing console folder, with one line', async () => {
    for (const [env, pattern] of [
      [{ CTRL_CORS_ORIGINS: '*' }, /^invalid setting: CTRL_CORS_ORIGINS: "\*" is refused/],
      [
        { CTRL_CONSOLE_DIR: '/nonexistent/zac' },
        /^controller failed to start: CTRL_CONSOLE_DIR: \/nonexistent\/zac: /,
      ],
    ] as const) {
      const { code, stderr } = await runToExit({ CTRL_DB: ':memory:', ...env })
      expect(code).toBe(1)
      expect(stderr).toMatch(pattern)
      expect(stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})
