import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { onTestFinished } from 'vitest'

export interface JwksServer {
  url: string
  /** Requests served so far. */
  hits: () => number
  /** What the next responses are. */
  respond: (r: {
    status?: number
    type?: string
    body?: string
    delayMs?: number
    location?: string
  }) => void
  setKeys: (keys: object[]) => void
  /** Called with each request's number (from 1) as it arrives, before it is answered. */
  onHit: (fn: (hit: number) => void) => void
  close: () => Promise<void>
}

/** A real HTTP server on 127.0.0.1 serving a JWKS the test controls. */
export async function startJwksServer(keys: object[] = []): Promise<JwksServer> {
  let hits = 0
  let state = {
    status: 200,
    type: 'application/json',
    body: JSON.stringify({ keys }),
    delayMs: 0,
    location: undefined as string | undefined,
  }
  let onHit: (hit: number) => void = () => {}
  const server: Server = createServer((req, res) => {
    hits++
    onHit(hits)
    const send = () => {
      const headers: Record<string, string> = { 'content-type': state.type }
      if (state.location) headers.location = state.location
      res.writeHead(state.status, headers)
      res.end(state.body)
    }
    if (state.delayMs > 0) setTimeout(send, state.delayMs)
    else send()
    req.resume()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo // listening on TCP
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  onTestFinished(close)
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    hits: () => hits,
    respond: (r) => {
      state = { ...state, ...r }
    },
    onHit: (fn) => {
      onHit = fn
    },
    setKeys: (k) => {
      state = { ...state, status: 200, type: 'application/json', body: JSON.stringify({ keys: k }) }
    },
    close,
  }
}
