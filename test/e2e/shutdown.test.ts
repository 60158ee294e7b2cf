import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, get } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type Started, startServer } from '../helpers/server-process.js'

const PASSWORD = 'shutdown-admin-password'
const M = '/edge/management/v1'
const dir = mkdtempSync(join(tmpdir(), 'ctrl-shutdown-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const portOf = (s: Started) => Number(new URL(s.base).port)

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`never saw ${what}`)
}

/** A raw connection that collects what the server sends and notes when it closes the connection. */
async function open(port: number) {
  const socket: Socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let text = ''
  socket.on('data', (d) => {
    text += d
  })
  socket.on('error', () => {})
  // Closed either way: `once` rejects when an 'error' (a reset at shutdown) comes before 'close'.
  const closed = once(socket, 'close').then(
    () => true,
    () => true,
  )
  return { socket, text: () => text, closed }
}

/**
 * A client sending requests back to back on one kept-alive connection until an answer tells it to
 * close the connection (it would then connect to another instance). Resolves with what went wrong
 * on the way: nothing, when shutdown let every request it sent be answered.
 */
async function busyClient(base: string): Promise<{ answers: number; errors: string[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const errors: string[] = []
  let answers = 0
  try {
    for (;;) {
      const closed = await new Promise<boolean | undefined>((resolve) => {
        const req = get(`${base}/edge/client/v1/external-jwt-signers`, { agent }, (res) => {
          res.resume()
          res.on('end', () => resolve(res.headers.connection === 'close'))
        })
        req.on('error', (err: NodeJS.ErrnoException) => {
          errors.push(
            `${err.code ?? err.message}${req.reusedSocket ? ' on a kept-alive connection' : ''}`,
          )
          resolve(undefined)
        })
      })
      if (closed === undefined) return { answers, errors }
      answers++
      if (closed) return { answers, errors }
    }
  } finally {
    agent.destroy()
  }
}

const loginBody = JSON.stringify({ username: 'admin', password: PASSWORD })
const loginHead = (host: string) =>
  `POST ${M}/authenticate?method=password HTTP/1.1\r\nHost: ${host}\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${loginBody.length}\r\n\r\n`

describe('shutdown in the order load balancers expect', () => {
  it('fails readiness at once, keeps serving through CTRL_SHUTDOWN_DELAY, closes idle keep-alive connections and exits 0, however often SIGTERM arrives', async () => {
    const s = await startServer({
      CTRL_DB: join(dir, 'order.db'),
      CTRL_ADMIN_PASSWORD: PASSWORD,
      CTRL_SHUTDOWN_DELAY: '1s',
      // Counted from the end of the grace: an idle connection is no running request.
      CTRL_SHUTDOWN_TIMEOUT: '300ms',
    })
    const idle = await open(portOf(s))
    idle.socket.write(`GET /version HTTP/1.1\r\nHost: ${new URL(s.base).host}\r\n\r\n`)
    await until(() => idle.text().includes('\r\n\r\n'), 'the first answer')
    expect(idle.text()).toMatch(/^HTTP\/1\.1 200/)
    expect((await fetch(`${s.base}/health-checks/ready`)).status).toBe(200)

    s.child.kill('SIGTERM')
    await until(() => s.stdout().includes('readiness fails'), 'the shutdown line')
    for (const path of ['/health-checks/ready', '/health-checks']) {
      const res = await fetch(`${s.base}${path}`)
      expect(res.status).toBe(503)
      // The health envelope with the edge error envelope's fields, as the 503 documents it.
      const body = (await res.json()) as {
        error: { code: string }
        data: { checks: { id: string; healthy: boolean }[] }
      }
      expect(body.error.code).toBe('SERVICE_UNAVAILABLE')
      expect(body.data.checks).toContainEqual(
        expect.objectContaining({ id: 'accepting', healthy: false }),
      )
    }
    s.child.kill('SIGTERM') // a process-group signal arrives twice: the order stays
    const version = await fetch(`${s.base}/version`)
    expect(version.status).toBe(200)
    const [code] = await once(s.child, 'exit')
    expect(code).toBe(0)
    expect(await idle.closed).toBe(true)
    const out = s.stdout()
    const steps = [
      'readiness fails',
      'shutdown already under way',
      'no longer accepting',
      'shut down',
    ]
    const at = steps.map((step) => out.indexOf(step))
    expect(at.every((i) => i >= 0)).toBe(true)
    expect([...at].sort((a, b) => a - b)).toEqual(at)
    expect(out).not.toContain('requests still running')
  })

  it('serves a request still arriving on a kept-alive connection while closing, with Connection: close, and keeps its login', async () => {
    const db = join(dir, 'in-flight.db')
    const s = await startServer({ CTRL_DB: db, CTRL_ADMIN_PASSWORD: PASSWORD })
    const conn = await open(portOf(s))
    const host = new URL(s.base).host
    conn.socket.write(loginHead(host) + loginBody.slice(0, 10))
    s.child.kill('SIGTERM')
    await until(() => s.stdout().includes('no longer accepting'), 'the listener closing')
    conn.socket.write(loginBody.slice(10))
    expect(await conn.closed).toBe(true)
    const [head] = conn.text().split('\r\n\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 200/)
    expect(head?.toLowerCase()).toContain('connection: close')
    const token = /zt-session: (\S+)/i.exec(head ?? '')?.[1] as string
    const [code] = await once(s.child, 'exit')
    expect(code).toBe(0)

    // The login was acknowledged: it was committed before the store closed.
    const again = await startServer({ CTRL_DB: db, CTRL_ADMIN_PASSWORD: PASSWORD })
    try {
      const res = await fetch(`${again.base}${M}/current-api-session`, {
        headers: { 'zt-session': token },
      })
      expect(res.status).toBe(200)
    } finally {
      again.child.kill('SIGINT')
      await once(again.child, 'exit')
    }
  })

  for (const [signal, delay] of [
    ['SIGTERM', '300ms'],
    ['SIGINT', '1h'],
  ] as const) {
    it(`answers every request of busy kept-alive clients across a ${signal}, the last with Connection: close, and resets none`, async () => {
      const s = await startServer({
        CTRL_DB: ':memory:',
        CTRL_ADMIN_PASSWORD: PASSWORD,
        CTRL_SHUTDOWN_DELAY: delay,
      })
      const clients = Array.from({ length: 4 }, () => busyClient(s.base))
      await new Promise((r) => setTimeout(r, 200))
      s.child.kill(signal)
      const results = await Promise.all(clients)
      // Node counted each busy connection idle while its next request was unread, and closed it
      // under that request: every client here saw ECONNRESET on its kept-alive connection.
      expect(results.flatMap((r) => r.errors)).toEqual([])
      for (const r of results) expect(r.answers).toBeGreaterThan(1)
      const [code] = await once(s.child, 'exit')
      expect(code).toBe(0)
    })
  }

  it('skips the delay on SIGINT (an operator pressing Ctrl-C) and exits 0', async () => {
    const s = await startServer({
      CTRL_DB: ':memory:',
      CTRL_ADMIN_PASSWORD: PASSWORD,
      CTRL_SHUTDOWN_DELAY: '1h',
    })
    s.child.kill('SIGINT')
    const [code] = await once(s.child, 'exit')
    expect(code).toBe(0)
  })

  it('ends a request still running at CTRL_SHUTDOWN_TIMEOUT and exits 0', async () => {
    const s = await startServer({
      CTRL_DB: ':memory:',
      CTRL_ADMIN_PASSWORD: PASSWORD,
      CTRL_SHUTDOWN_TIMEOUT: '300ms',
    })
    const stalled = await open(portOf(s))
    stalled.socket.write(loginHead(new URL(s.base).host) + loginBody.slice(0, 5))
    s.child.kill('SIGTERM')
    const [code] = await once(s.child, 'exit')
    expect(code).toBe(0)
    expect(await stalled.closed).toBe(true)
    expect(s.stdout()).toContain('requests still running at the shutdown timeout')
  })
})
