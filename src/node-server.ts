import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http'
import { createServer as createHttpsServer, type ServerOptions } from 'node:https'
import { Server as NetServer } from 'node:net'
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
      // response begun before closing gets it from the onSend hook (buildApp).
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

/**
 * Stops `server` accepting connections, and leaves the open ones be (Node's `server.close()` would
 * close the idle ones at once, with any request already on its way to them); resolves when every
 * connection has ended or after `graceMs`. Fastify's close then closes what is left idle.
 */
export function stopAccepting(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      server.off('close', done)
      resolve()
    }
    const timer = setTimeout(done, graceMs)
    server.once('close', done)
    // net.Server's own close: the listening socket only, 'close' once no connection is left.
    NetServer.prototype.close.call(server)
  })
}
