import { generateKeyPairSync } from 'node:crypto'
import { createServer, type Server, Socket } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrationsDir, readMigrations } from '../../src/store/migrations.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { freePort } from '../helpers/haproxy.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { signJwt } from '../helpers/jwt.js'
import { cutListenersThen } from '../helpers/listeners.js'
import { runToExit, type Started, startServer, stopServer } from '../helpers/server-process.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'

const PASSWORD = 'cluster-admin-password'
const M = '/edge/management/v1'
const C = '/edge/client/v1'

interface Call {
  status: number
  body: { data?: unknown; error?: { code: string } } & Record<string, unknown>
  headers: Headers
}

async function call(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; bearer?: string } = {},
): Promise<Call> {
  const headers: Record<string, string> = {}
  if (options.token) headers['zt-session'] = options.token
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers }
}

async function login(base: string): Promise<string> {
  const res = await fetch(`${base}${M}/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  expect(res.status).toBe(200)
  return res.headers.get('zt-session') as string
}

/** Polls until `check` passes, at most `withinMs` (the propagation bound under test). */
async function within(withinMs: number, check: () => Promise<void>): Promise<number> {
  const started = Date.now()
  for (;;) {
    try {
      await check()
      return Date.now() - started
    } catch (err) {
      if (Date.now() - started > withinMs) throw err
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

/** A TCP proxy in front of PostgreSQL, so a test can take the database away and bring it back. */
async function startProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const listen = async () => {
    server = createServer((client) => {
      const upstream = new Socket()
      sockets.add(client).add(upstream)
      upstream.connect(target.port, target.host)
      client.pipe(upstream).pipe(client)
      const end = () => {
        client.destroy()
        upstream.destroy()
        sockets.delete(client)
        sockets.delete(upstream)
      }
      client.on('error', end).on('close', end)
      upstream.on('error', end).on('close', end)
    })
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port // listening on TCP
  }
  await listen()
  return {
    port: () => port,
    /** Refuses new connections and cuts every open one: the database is gone. */
    down: async () => {
      await new Promise<void>((resolve) => {
        server?.close(() => resolve())
        for (const s of sockets) s.destroy()
      })
    },
    up: listen,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) =>
        server?.listening ? server.close(() => resolve()) : resolve(),
      )
    },
  }
}

describe.skipIf(!PG_URL)('three controllers on one PostgreSQL', () => {
  let url: string
  let nodes: Started[] = []
  let cert: TestCert
  const env = (extra: Record<string, string> = {}) => ({
    CTRL_DB: url,
    CTRL_ADMIN_PASSWORD: PASSWORD,
    CTRL_LOG_LEVEL: 'info',
    CTRL_DB_STATEMENT_TIMEOUT: '2s',
    CTRL_JWKS_COOLDOWN: '0s',
    ...extra,
  })

  beforeAll(async () => {
    url = await createTestDatabase()
    cert = await makeCert()
    // All three at the same moment on an empty database.
    nodes = await Promise.all([startServer(env()), startServer(env()), startServer(env())])
  }, 60_000)
  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopServer(n)))
  })

  it('migrates once and creates exactly one admin when started together', async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const migrations = await client.query('SELECT version FROM schema_migrations')
      const files = readMigrations(join(migrationsDir(), 'postgres')).map((m) => m.version)
      expect(migrations.rows.map((r) => r.version).sort((x, y) => x - y)).toEqual(files) // each applied once
      const admins = await client.query('SELECT name FROM identities WHERE is_admin')
      expect(admins.rows).toEqual([{ name: 'admin' }])
    } finally {
      await client.end()
    }
    for (const n of nodes) await login(n.base)
  })

  it('shows a change made through one instance on every other within a second', async () => {
    const [a, b, c] = nodes as [Started, Started, Started]
    const ta = await login(a.base)
    const created = await call(a.base, 'POST', `${M}/external-jwt-signers`, {
      token: ta,
      body: {
        name: 'cluster-idp',
        enabled: true,
        issuer: 'https://cluster-idp.test',
        audience: 'ziti',
        certPem: cert.certPem,
        kid: 'k1',
        externalAuthUrl: 'https://cluster-idp.test/auth',
      },
    })
    expect(created.status).toBe(201)
    const id = (created.body.data as { id: string }).id
    const listed = (n: Started) => async () => {
      const res = await call(n.base, 'GET', `${C}/external-jwt-signers`)
      expect((res.body.data as { id: string }[]).map((s) => s.id)).toContain(id)
    }
    await within(1000, listed(b))
    await within(1000, listed(c))

    // A JWT login through B and C works once B and C know the signer.
    const tb = await login(b.base)
    const identity = await call(b.base, 'POST', `${M}/identities`, {
      token: tb,
      body: { name: 'alice' },
    })
    const aliceId = (identity.body.data as { id: string }).id
    const jwt = await signJwt(
      cert.privateKey,
      { iss: 'https://cluster-idp.test', aud: 'ziti', sub: aliceId },
      { kid: 'k1' },
    )
    const jwtLogin = (n: Started) =>
      call(n.base, 'POST', `${C}/authenticate?method=ext-jwt`, { bearer: jwt })
    await within(1000, async () => expect((await jwtLogin(c)).status).toBe(200))
    expect((await jwtLogin(b)).status).toBe(200) // B now has this token verified and cached

    // Disabled through A: refused by B (cached token) and C within a second.
    const disabled = await call(a.base, 'PATCH', `${M}/external-jwt-signers/${id}`, {
      token: ta,
      body: { enabled: false },
    })
    expect(disabled.status).toBe(200)
    await within(1000, async () => expect((await jwtLogin(b)).status).toBe(401))
    await within(1000, async () => expect((await jwtLogin(c)).status).toBe(401))
    await within(1000, async () => {
      const res = await call(c.base, 'GET', `${C}/external-jwt-signers`)
      expect((res.body.data as { id: string }[]).map((s) => s.id)).not.toContain(id)
    })

    // Enabled again, then the identity disabled through C: refused by A and B.
    await call(a.base, 'PATCH', `${M}/external-jwt-signers/${id}`, {
      token: ta,
      body: { enabled: true },
    })
    await within(1000, async () => expect((await jwtLogin(b)).status).toBe(200))
    const tc = await login(c.base)
    await call(c.base, 'PATCH', `${M}/identities/${aliceId}`, {
      token: tc,
      body: { disabled: true },
    })
    await within(1000, async () => expect((await jwtLogin(a)).status).toBe(401))
    await within(1000, async () => expect((await jwtLogin(b)).status).toBe(401))
    await call(c.base, 'PATCH', `${M}/identities/${aliceId}`, {
      token: tc,
      body: { disabled: false },
    })

    // A policy that refuses JWT login, changed through B, holds on A at once after.
    await within(1000, async () => expect((await jwtLogin(a)).status).toBe(200))
    await call(b.base, 'PATCH', `${M}/auth-policies/default`, {
      token: tb,
      body: { primary: { extJwt: { allowed: false } } },
    })
    await within(1000, async () => expect((await jwtLogin(a)).status).toBe(401))
    await within(1000, async () => expect((await jwtLogin(c)).status).toBe(401))
    await call(b.base, 'PATCH', `${M}/auth-policies/default`, {
      token: tb,
      body: { primary: { extJwt: { allowed: true } } },
    })
    await within(1000, async () => expect((await jwtLogin(a)).status).toBe(200))
  })

  it("refreshes a signer's keys on every instance when one is asked to", async () => {
    const [a, b, c] = nodes as [Started, Started, Started]
    // Real public keys: a symmetric one would be refused at fetch.
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
      format: 'jwk',
    })
    const jwks = await startJwksServer([{ ...key, kid: 'old' }])
    const ta = await login(a.base)
    const created = await call(a.base, 'POST', `${M}/external-jwt-signers`, {
      token: ta,
      body: {
        name: 'rotating',
        enabled: true,
        issuer: 'https://rotating.test',
        audience: 'ziti',
        jwksEndpoint: jwks.url,
      },
    })
    const id = (created.body.data as { id: string }).id
    const kids = async (n: Started) => {
      const res = await call(n.base, 'GET', `${M}/external-jwt-signers/${id}/keys`, {
        token: await login(n.base),
      })
      return (res.body.data as { kids: string[] }).kids
    }
    for (const n of [b, c]) await within(2000, async () => expect(await kids(n)).toEqual(['old']))
    jwks.setKeys([{ ...key, kid: 'new' }])
    const refreshed = await call(a.base, 'POST', `${M}/external-jwt-signers/${id}/refresh-keys`, {
      token: ta,
    })
    expect((refreshed.body.data as { kids: string[] }).kids).toEqual(['new'])
    for (const n of [b, c]) await within(1000, async () => expect(await kids(n)).toEqual(['new']))
  })

  it('shares sessions: made on A works on B; ended on B is refused by A within a second', async () => {
    const [a, b] = nodes as [Started, Started]
    const token = await login(a.base)
    expect((await call(a.base, 'GET', `${M}/current-api-session`, { token })).status).toBe(200)
    expect((await call(b.base, 'GET', `${M}/current-api-session`, { token })).status).toBe(200)
    expect((await call(b.base, 'DELETE', `${M}/current-api-session`, { token })).status).toBe(200)
    await within(1000, async () => {
      expect((await call(a.base, 'GET', `${M}/current-api-session`, { token })).status).toBe(401)
    })
  })

  it('bypasses its caches while its notification connection is down, and rereads them after', async () => {
    const [a, b] = nodes as [Started, Started]
    const ta = await login(a.base)
    const signers = await call(
      a.base,
      'GET',
      `${M}/external-jwt-signers?filter=name%3D%22cluster-idp%22`,
      {
        token: ta,
      },
    )
    const id = (signers.body.data as { id: string }[])[0]?.id as string
    const tb = await login(b.base)
    const bob = await call(b.base, 'POST', `${M}/identities`, { token: tb, body: { name: 'bob' } })
    const bobId = (bob.body.data as { id: string }).id
    const jwt = await signJwt(
      cert.privateKey,
      { iss: 'https://cluster-idp.test', aud: 'ziti', sub: bobId },
      { kid: 'k1' },
    )
    const jwtLogin = () => call(b.base, 'POST', `${C}/authenticate?method=ext-jwt`, { bearer: jwt })
    await within(1000, async () => expect((await jwtLogin()).status).toBe(200)) // cached on B

    // Cut every instance's LISTEN connection and change the signer at once through A: the
    // notification is sent while nobody listens, so B can only learn of it by not trusting caches.
    const cut = await cutListenersThen(url, [
      ['UPDATE signers SET enabled = false, updated_at = now() WHERE id = $1', [id]],
    ])
    expect(cut).toBe(3)
    await within(1000, async () => expect((await jwtLogin()).status).toBe(401))
    // Listening again: the caches are reread and the instance follows notifications as before.
    await call(a.base, 'PATCH', `${M}/external-jwt-signers/${id}`, {
      token: ta,
      body: { enabled: true },
    })
    await within(3000, async () => expect((await jwtLogin()).status).toBe(200))
  })

  it('loses no acknowledged write when an instance is killed under load', async () => {
    const [a, b, c] = nodes as [Started, Started, Started]
    const tokens = await Promise.all([a, b, c].map((n) => login(n.base)))
    const acknowledged: string[] = []
    let stop = false
    const writer = async (n: Started, token: string, prefix: string) => {
      for (let i = 0; !stop && i < 400; i++) {
        try {
          const res = await call(n.base, 'POST', `${M}/identities`, {
            token,
            body: { name: `${prefix}-${i}` },
          })
          if (res.status === 201) acknowledged.push((res.body.data as { id: string }).id)
        } catch {
          // the killed instance's connections fail; those writes were never acknowledged
        }
      }
    }
    const [t0, t1, t2] = tokens as [string, string, string]
    const load = [writer(a, t0, 'wa'), writer(b, t1, 'wb'), writer(c, t2, 'wc')]
    await new Promise((r) => setTimeout(r, 300))
    c.child.kill('SIGKILL')
    await new Promise((r) => setTimeout(r, 500))
    stop = true
    await Promise.all(load)
    expect(acknowledged.length).toBeGreaterThan(10)
    const all = await call(
      a.base,
      'GET',
      `${M}/identities?filter=${encodeURIComponent('true limit none')}`,
      {
        token: t0,
      },
    )
    expect(all.status).toBe(200)
    const stored = new Set((all.body.data as { id: string }[]).map((i) => i.id))
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([])
    expect((await call(b.base, 'GET', `${M}/identities`, { token: t1 })).status).toBe(200)
  }, 60_000)
})

describe.skipIf(!PG_URL)('one controller when PostgreSQL goes away', () => {
  it('answers 503 while the database is unreachable, and recovers by itself', async () => {
    const target = new URL(PG_URL as string)
    const proxy = await startProxy({ host: target.hostname, port: Number(target.port || 5432) })
    const direct = new URL(await createTestDatabase())
    direct.host = `127.0.0.1:${proxy.port()}`
    const node = await startServer({
      CTRL_DB: direct.toString(),
      CTRL_ADMIN_PASSWORD: PASSWORD,
      CTRL_LOG_LEVEL: 'info',
      CTRL_DB_STATEMENT_TIMEOUT: '1s',
    })
    try {
      const token = await login(node.base)
      await proxy.down()
      const started = Date.now()
      const list = await call(node.base, 'GET', `${M}/identities`, { token })
      expect(list.status).toBe(503)
      expect(list.body.error?.code).toBe('SERVICE_UNAVAILABLE')
      expect(Date.now() - started).toBeLessThan(5000)
      expect((await call(node.base, 'GET', '/health-checks')).status).toBe(503)
      await proxy.up()
      await within(10_000, async () => {
        expect((await call(node.base, 'GET', '/health-checks')).status).toBe(200)
        expect((await call(node.base, 'GET', `${M}/identities`, { token })).status).toBe(200)
      })
    } finally {
      await stopServer(node)
      await proxy.close()
    }
  }, 60_000)

  it('exits 1 naming CTRL_DB, without the password, when PostgreSQL is unreachable at start', async () => {
    const port = await freePort() // released: nothing listens there
    const result = await runToExit({
      CTRL_DB: `postgres://postgres:sekret-pw@127.0.0.1:${port}/none`,
      CTRL_DB_CONNECT_TIMEOUT: '2s',
    })
    expect(result.code).toBe(1)
    expect(result.ms).toBeGreaterThanOrEqual(1500)
    const lines = result.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('CTRL_DB')
    expect(lines[0]).toContain('ECONNREFUSED')
    expect(result.stderr).not.toContain('sekret-pw')
  }, 30_000)

  it('hides a password given as a query parameter of CTRL_DB too', async () => {
    const port = await freePort() // released: nothing listens there
    const result = await runToExit({
      CTRL_DB: `postgres://postgres@127.0.0.1:${port}/none?password=query-sekret&sslpassword=key-sekret&application_name=ctrl`,
      CTRL_DB_CONNECT_TIMEOUT: '1s',
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('CTRL_DB')
    expect(result.stderr).toContain('application_name=ctrl')
    expect(result.stderr).not.toContain('query-sekret')
    expect(result.stderr).not.toContain('key-sekret')
  }, 30_000)
})
