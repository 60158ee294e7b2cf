import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http'
import { createServer as createHttpsServer, type ServerOptions } from 'node:https'
import type { FastifyServerFactory } from 'fastify'
import type { Lane } from './routes/lanes.js'

export interface NodeServerOptions {
  /** Node's server options (timeouts, Host handling), and the certificate and key for HTTPS. */
  server: ServerOptions
  https: boolean
  keepAliveTimeoutMs: number
  requestTimeoutMs: number
  /** True once shutdown stopped accepting: every response then closes its connection. */
  closing: () => boolean
}

/**
 * Fastify's server factory: Node's HTTP (or HTTPS) server as Fastify would make it from the same
 * settings, except that each request is first offered to `lane`, and goes to Fastify when the lane
 * leaves it.
 */
export function serverWithLane(o: NodeServerOptions, lane: Lane): FastifyServerFactory<Server> {
  return (handler) => {
    const listener: RequestListener = (req, res) => {
      // Set before any answer is written, so the lane's answers close the connection too; a
      // response begun before closing ends its connection once idle (closeIdleConnections).
      if (o.closing()) res.setHeader('connection', 'close')
      if (!lane(req, res)) handler(req, res)
    }
    // An https.Server is an http.Server to every caller here (listen, close, address).
    const server: Server = o.https
      ? createHttpsServer(o.server, listener)
      : createHttpServer(o.server, listener)
    server.keepAliveTimeout = o.keepAliveTimeoutMs
    server.requestTimeout = o.requestTimeoutMs
    return server
  }
}
