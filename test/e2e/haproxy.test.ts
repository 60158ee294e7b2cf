import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeCert } from '../helpers/certs.js'
import { findHaproxy, freePort, type Haproxy, startHaproxy } from '../helpers/haproxy.js'
import { type Started, startServer } from '../helpers/server-process.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'

const PASSWORD = 'haproxy-admin-password'
const M = '/edge/management/v1'
const C = '/edge/client/v1'
const haproxy = findHaproxy()
// CI installs haproxy (.ci/run): there, a missing one fails instead of skipping.
const mustRun = process.env.CI === 'true'
if (!haproxy && !mustRun) console.log('haproxy not found: the load-balancer test is skipped')

/** A bounded mixed load through the balancer: counts failures and keeps every acknowledged create. */
function runLoad(base: string, token: string, workers = 4) {
  let stopped = false
  let n = 0
  const failures: string[] = []
  const created: string[] = []
  const ok = async (what: string, res: Promise<Response>, expected: number) => {
    try {
      const r = await res
      const body = await r.text()
      if (r.status !== expected) failures.push(`${what}: ${r.status} ${body.slice(0, 120)}`)
      return r.status === expected ? body : undefined
    } catch (err) {
      failures.push(`${what}: ${err instanceof Error ? err.message : String(err)}`)
      return undefined
    }
  }
  const auth = { 'zt-session': token }
  const json = { 'content-type': 'application/json' }
  const one = async (i: number) => {
    const k = i % 10
    if (k < 4) await ok('client list', fetch(`${base}${C}/external-jwt-signers`), 200)
    else if (k < 7)
      await ok('management read', fetch(`${base}${M}/identities`, { headers: auth }), 200)
    else if (k === 7) {
      const body = JSON.stringify({ username: 'admin', password: PASSWORD })
      const req = fetch(`${base}${M}/authenticate?method=password`, {
        method: 'POST',
        headers: json,
        body,
      })
      await ok('login', req, 200)
    } else {
      const name = `lb-${i}-${Math.random().toString(36).slice(2)}`
      // A certificate of its own: one certificate belongs to one signer.
      const { certPem } = await makeCert({ kind: 'ES256', cn: name })
      const body = JSON.stringify({
        name,
        enabled: true,
        issuer: `https://${name}.example`,
        audience: 'ziti',
        kid: name,
        certPem,
        externalAuthUrl: `https://${name}.example/login`,
      })
      const req = fetch(`${base}${M}/external-jwt-signers`, {
        method: 'POST',
        headers: { ...auth, ...json },
        body,
      })
      const text = await ok('signer create', req, 201)
      if (text) created.push((JSON.parse(text) as { data: { id: string } }).data.id)
    }
  }
  const loops = Array.from({ length: workers }, async () => {
    while (!stopped) {
      await one(n++)
      // Bounded: two cores also run three servers, HAProxy and PostgreSQL.
      await new Promise((r) => setTimeout(r, 10))
    }
  })
  return {
    failures,
    created,
    requests: () => n,
    stop: async () => {
      stopped = true
      await Promise.all(loops)
    },
  }
}

describe.skipIf((!haproxy && !mustRun) || !PG_URL)('three controllers behind HAProxy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-haproxy-'))
  const ports: number[] = []
  const nodes: Started[] = []
  let lb: Haproxy
  let url: string
  let token: string
  const start = (port: number) =>
    startServer(
      {
        CTRL_DB: url,
        CTRL_PORT: String(port),
        CTRL_ADMIN_PASSWORD: PASSWORD,
        CTRL_SHUTDOWN_DELAY: '2s',
        CTRL_LOG_LEVEL: 'info',
        // As the README's deployment: the balancer passes each client's address on.
        CTRL_TRUST_PROXY: '127.0.0.1',
        // The load logs in as the one admin, from one address, many times a second (as the bench
        // does): the login limits and the session cap would refuse it, or end the session the
        // management reads use, which is not what this test measures.
        CTRL_AUTH_RATE_LIMIT: '0',
        CTRL_AUTH_IDENTITY_RATE_LIMIT: '0',
        CTRL_MAX_SESSIONS_PER_IDENTITY: '1000000',
      },
      40_000,
    )
  const exit = async (s: Started) => {
    const [code] = await once(s.child, 'exit')
    return code as number | null
  }

  beforeAll(async () => {
    expect(haproxy, 'haproxy must be installed in CI').toBeDefined()
    url = await createTestDatabase()
    for (let i = 0; i < 3; i++) ports.push(await freePort())
    nodes.push(await start(ports[0] as number))
    nodes.push(...(await Promise.all([start(ports[1] as number), start(ports[2] as number)])))
    lb = await startHaproxy(haproxy as string, dir, ports)
    const res = await fetch(`${lb.base}${M}/authenticate?method=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    })
    token = res.headers.get('zt-session') as string
    // Until every server passed its first checks, HAProxy would not spread the load.
    await new Promise((r) => setTimeout(r, 1000))
  }, 60_000)
  afterAll(async () => {
    await lb?.stop()
    for (const s of nodes) if (s.child.exitCode === null) s.child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  /** Waits until HAProxy sends the load to `s`: a write in its access log (reads log at debug). */
  const servingLoad = async (s: Started) => {
    for (let i = 0; !s.stdout().includes('"method":"POST"'); i++) {
      if (i > 400) throw new Error(`HAProxy sent nothing to the restarted instance: ${s.stdout()}`)
      await new Promise((r) => setTimeout(r, 25))
    }
  }

  const listedIds = async () => {
    const res = await fetch(
      `${lb.base}${M}/external-jwt-signers?filter=${encodeURIComponent('limit none')}`,
      { headers: { 'zt-session': token } },
    )
    expect(res.status).toBe(200)
    const body = (await res.json()) as { data: { id: string }[] }
    return new Set(body.data.map((s) => s.id))
  }

  it('restarts the three one after another with SIGTERM under load without a failed request or a lost create', async () => {
    const load = runLoad(lb.base, token)
    await new Promise((r) => setTimeout(r, 500))
    for (let i = 0; i < 3; i++) {
      const old = nodes[i] as Started
      old.child.kill('SIGTERM')
      expect(await exit(old)).toBe(0)
      nodes[i] = await start(ports[i] as number)
      // HAProxy's rise: a passing check before it sends traffic there again.
      await servingLoad(nodes[i] as Started)
    }
    await load.stop()
    console.log(
      `rolling restart: ${load.requests()} requests, ${load.failures.length} failed, ${load.created.length} creates acknowledged`,
    )
    expect(load.failures).toEqual([])
    expect(load.created.length).toBeGreaterThan(0)
    const listed = await listedIds()
    expect(load.created.filter((id) => !listed.has(id))).toEqual([])
  }, 120_000)

  it('loses no acknowledged create when one instance is killed under load (failures counted)', async () => {
    const load = runLoad(lb.base, token)
    await new Promise((r) => setTimeout(r, 500))
    const victim = nodes[1] as Started
    victim.child.kill('SIGKILL')
    await exit(victim)
    await new Promise((r) => setTimeout(r, 1000))
    nodes[1] = await start(ports[1] as number)
    await new Promise((r) => setTimeout(r, 800))
    await load.stop()
    console.log(
      `SIGKILL of one instance: ${load.requests()} requests, ${load.failures.length} failed (${load.failures.slice(0, 3).join('; ')}), ${load.created.length} creates acknowledged`,
    )
    const listed = await listedIds()
    expect(load.created.filter((id) => !listed.has(id))).toEqual([])
  }, 60_000)
})
