import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, type Started, startProcess } from './processes.js'

export const PASSWORD = 'bench-admin-password'
const here = fileURLToPath(new URL('.', import.meta.url))

export type Call = (method: string, url: string, body?: unknown) => Promise<Response>

export interface Controller extends Started {
  base: string
  token: string
  call: Call
  pid: number
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

/**
 * Starts the controller as `npm start` runs it (its own process, default log level unless `env`
 * says otherwise) on `db`, logs in as the admin and seeds `signers` signers with externalAuthUrl.
 */
export async function startController(
  db: string,
  options: { signers?: number; env?: Record<string, string> } = {},
): Promise<Controller> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const start = startCommand()
  const started = await startProcess(
    join(here, '../src/server.js'),
    base,
    '/health-checks',
    {
      ...start.env,
      CTRL_PORT: String(port),
      CTRL_DB: db,
      CTRL_ADMIN_PASSWORD: PASSWORD,
      // The login runs send thousands of logins a second from 127.0.0.1 as one identity: the
      // login limits (on by default) would measure the limiter, not the login path, and the
      // session cap would end the session a later secondary-factor run uses.
      CTRL_AUTH_RATE_LIMIT: '0',
      CTRL_AUTH_IDENTITY_RATE_LIMIT: '0',
      CTRL_MAX_SESSIONS_PER_IDENTITY: '1000000',
      ...options.env,
    },
    start.flags,
  )
  const login = await fetch(`${base}/edge/management/v1/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  const token = login.headers.get('zt-session') as string
  const call: Call = (method, url, body) =>
    fetch(`${base}${url}`, {
      method,
      headers: { 'content-type': 'application/json', 'zt-session': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  for (let i = 0; i < (options.signers ?? 0); i++) {
    await call('POST', '/edge/management/v1/external-jwt-signers', {
      name: `signer-${i}`,
      enabled: true,
      issuer: `https://idp-${i}.example`,
      audience: 'ziti',
      // Loopback port 1: the background key fetch is refused locally, nothing leaves the machine.
      jwksEndpoint: `http://127.0.0.1:1/jwks-${i}`,
      externalAuthUrl: `https://idp-${i}.example/auth`,
    })
  }
  return { ...started, base, token, call }
}
