import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, type Started, startProcess } from './processes.js'

export const PASSWORD = 'bench-admin-password'
const here = fileURLToPath(new URL('.', import.meta.url))

export type Call = (method: string, url: string, body?: unknown) => Promise<Response>

export interface Controller extends Started {
  base: string
  /**
   * A fresh admin session. Runs take one right before they use it: with the default session cap,
   * an identity's older sessions end as it logs in again.
   */
  adminSession: () => Promise<string>
  /** Calls the management API as the admin (logging in again if the session has ended). */
  call: Call
  pid: number
}

/** Logs `username` in with its password through `api`; resolves with the session token. */
export async function passwordSession(
  base: string,
  username: string,
  password: string,
  api: 'client' | 'management' = 'management',
): Promise<string> {
  const res = await fetch(`${base}/edge/${api}/v1/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  })
  const token = res.headers.get('zt-session')
  if (!res.ok || token === null)
    throw new Error(`bench: ${username} could not log in (${res.status})`)
  return token
}

/**
 * How `npm start` runs the server (`NAME=value … node <options> dist/src/server.js` in
 * package.json): its environment settings and its Node options.
 */
function startCommand(): { env: Record<string, string>; flags: string[] } {
  const pkg = JSON.parse(readFileSync(join(here, '../../package.json'), 'utf8')) as {
    scripts: { start: string }
  }
  const words = pkg.scripts.start.split(/\s+/)
  const node = words.indexOf('node')
  const env: Record<string, string> = {}
  for (const word of words.slice(0, node)) {
    const at = word.indexOf('=') // the value may hold '=' itself
    if (at > 0) env[word.slice(0, at)] = word.slice(at + 1)
  }
  return { env, flags: words.slice(node + 1).filter((w) => w.startsWith('--')) }
}

/** Signers of `seedSigners` with an externalAuthUrl: the providers the client list shows. */
export const LISTED_SIGNERS = 10

/**
 * Seeds `count` signers, numbered from `from`; those numbered below `LISTED_SIGNERS` have an
 * externalAuthUrl, so the client list (every listed signer, unpaged) shows a deployment's handful
 * of providers while the management list pages through them all. Their JWKS endpoints are on
 * loopback port 1, so the background key fetch is refused locally and nothing leaves the machine.
 */
export async function seedSigners(call: Call, count: number, from = 0): Promise<void> {
  for (let i = from; i < from + count; i++) {
    const res = await call('POST', '/edge/management/v1/external-jwt-signers', {
      name: `signer-${i}`,
      enabled: true,
      issuer: `https://idp-${i}.example`,
      audience: 'ziti',
      jwksEndpoint: `http://127.0.0.1:1/jwks-${i}`,
      ...(i < LISTED_SIGNERS ? { externalAuthUrl: `https://idp-${i}.example/auth` } : {}),
    })
    if (res.status !== 201) throw new Error(`bench: signer-${i} was not created (${res.status})`)
  }
}

/**
 * Starts the controller as `npm start` runs it (its own process, its default settings but the
 * login rate limits, default log level unless `env` says otherwise) on `db`, and seeds `signers`
 * signers (see `seedSigners`).
 */
export async function startController(
  db: string,
  options: {
    signers?: number
    env?: Record<string, string>
    /** The server to start (default: this build's `dist/src/server.js`). */
    server?: string
  } = {},
): Promise<Controller> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const start = startCommand()
  const started = await startProcess(
    options.server ?? join(here, '../src/server.js'),
    base,
    '/health-checks',
    {
      ...start.env,
      CTRL_PORT: String(port),
      CTRL_DB: db,
      CTRL_ADMIN_PASSWORD: PASSWORD,
      // The login runs send thousands of logins a second from 127.0.0.1: the
      // login limits (on by default) would measure the limiter, not the login path.
      CTRL_AUTH_RATE_LIMIT: '0',
      CTRL_AUTH_IDENTITY_RATE_LIMIT: '0',
      ...options.env,
    },
    start.flags,
  )
  const adminSession = () => passwordSession(base, 'admin', PASSWORD)
  try {
    let token = await adminSession()
    const send = (method: string, url: string, body: unknown) =>
      fetch(`${base}${url}`, {
        method,
        headers: { 'content-type': 'application/json', 'zt-session': token },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const call: Call = async (method, url, body) => {
      const res = await send(method, url, body)
      if (res.status !== 401) return res
      await res.arrayBuffer()
      token = await adminSession()
      return send(method, url, body)
    }
    await seedSigners(call, options.signers ?? 0)
    return { ...started, base, adminSession, call }
  } catch (err) {
    // A controller that started but could not be set up is not left running.
    await started.stop().catch(() => {})
    throw err
  }
}
