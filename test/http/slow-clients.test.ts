import type { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { Config } from '../../src/config.js'
import { buildTestApp } from '../helpers/app.js'
import { makeServerCert } from '../helpers/certs.js'
import { listen, rawExchange } from './raw-http.js'

/** Writes `text` one byte every `everyMs` until done or the server closes the socket. */
function dribble(socket: Socket, text: string, everyMs = 200): void {
  let i = 0
  const timer = setInterval(() => {
    if (i >= text.length || socket.destroyed || !socket.writable) return clearInterval(timer)
    socket.write(text.charAt(i++))
  }, everyMs)
  socket.on('close', () => clearInterval(timer))
}

async function serve(config: Partial<Config>): Promise<number> {
  return listen(await buildTestApp({ config }))
}

const HEAD =
  'GET /health-checks HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n'
const SLACK = 3000

describe('slow clients', () => {
  it('cuts a client sending its request head one byte per 200 ms after the headers timeout', async () => {
    const port = await serve({ httpHeadersTimeoutMs: 1000, httpRequestTimeoutMs: 10_000 })
    const res = await rawExchange(port, (socket) => dribble(socket, HEAD))
    expect(res.status).toBe(408)
    expect(JSON.parse(res.body).error.code).toBe('REQUEST_TIMEOUT')
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(900)
    expect(res.closedAfterMs).toBeLessThan(1000 + SLACK)
  })

  it('cuts a connection that sends nothing after the headers timeout', async () => {
    const port = await serve({ httpHeadersTimeoutMs: 1000, httpRequestTimeoutMs: 10_000 })
    const res = await rawExchange(port, () => {})
    expect(res.closedAfterMs).toBeLessThan(1000 + SLACK)
  })

  it('cuts a connection that never finishes its TLS handshake after the headers timeout', async () => {
    const tls = await makeServerCert()
    const port = await listen(
      await buildTestApp({
        https: { cert: Buffer.from(tls.certPem), key: Buffer.from(tls.keyPem) },
        config: { httpHeadersTimeoutMs: 1000, httpRequestTimeoutMs: 10_000 },
      }),
    )
    // Nothing sent: the server waits for a ClientHello (Node's own limit would be 120 s).
    const silent = await rawExchange(port, () => {})
    expect(silent.closedAfterMs).toBeLessThan(1000 + SLACK)
    // Half a ClientHello's record header, then nothing.
    const stalled = await rawExchange(port, (socket) => socket.write(Buffer.from([0x16, 0x03])))
    expect(stalled.closedAfterMs).toBeLessThan(1000 + SLACK)
  })

  it('cuts a request whose body arrives one byte per 200 ms after the request timeout', async () => {
    const port = await serve({
      httpHeadersTimeoutMs: 1000,
      httpRequestTimeoutMs: 2000,
      httpKeepAliveTimeoutMs: 10_000,
    })
    const body = JSON.stringify({ username: 'admin', password: 'x'.repeat(200) })
    const res = await rawExchange(port, (socket) => {
      socket.write(
        'POST /edge/management/v1/authenticate?method=password HTTP/1.1\r\nHost: localhost\r\n' +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      )
      dribble(socket, body)
    })
    expect(res.status).toBe(408)
    expect(JSON.parse(res.body).error.code).toBe('REQUEST_TIMEOUT')
    // Later than the headers timeout: the head was complete, the body was what took too long.
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(1900)
    expect(res.closedAfterMs).toBeLessThan(2000 + SLACK)
  })

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    const port = await serve({
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 20_000,
      httpKeepAliveTimeoutMs: 1000,
    })
    const res = await rawExchange(port, (socket) =>
      socket.write('GET /health-checks HTTP/1.1\r\nHost: localhost\r\n\r\n'),
    )
    expect(res.status).toBe(200)
    expect(res.headers).toMatch(/keep-alive: timeout=1/i)
    expect(res.closedAfterMs).toBeLessThan(1000 + SLACK)
  })

  it('keeps serving a client that is slow but within every timeout', async () => {
    const port = await serve({ httpHeadersTimeoutMs: 5000, httpRequestTimeoutMs: 10_000 })
    const res = await rawExchange(port, (socket) =>
      dribble(
        socket,
        'GET /health-checks HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
        20,
      ),
    )
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body).data.healthy).toBe(true)
  })
})
