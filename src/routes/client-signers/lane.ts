import type { IncomingMessage, ServerResponse } from 'node:http'
import { notModified } from '../response-cache.js'
import type { ClientSignerPages } from './pages.js'

export interface ClientListLaneOptions {
  /** The list's path, without a query. */
  path: string
  pages: ClientSignerPages
  /** Whether a successful read would be logged now: the route then answers, and logs it. */
  logsReads: () => boolean
  /** Counts an answered request as the route's would be counted (metrics), when given. */
  count?: ((status: number, seconds: number) => void) | undefined
  /**
   * CORS is on (`CTRL_CORS_ORIGINS`): a request with an `Origin` goes to the route, whose CORS
   * hook decides its headers, and the lane's answers carry the `Vary: Origin` the route's do.
   */
  cors?: boolean | undefined
}

/** Answers a request when it can, before Fastify sees it; false leaves it to Fastify. */
export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean

/**
 * The default page of the client signer list, answered straight from Node's HTTP server. Every
 * client asks for it before it logs in, unauthenticated: it is the cheapest way to load the
 * controller from outside, and the route's own work (routing, validation, hooks, reply) cost
 * more than the kept page itself. This lane answers only what the route would answer the same
 * way, byte for byte: a GET of the bare path, with a Host header, whose page is kept and known
 * current without asking the store, while reads are not logged. Everything else, a query string,
 * HEAD, a page not kept yet, PostgreSQL while its notification connection is down, debug logging,
 * a CORS request, goes to the route.
 *
 * Speed path: it is what puts the client list at 0.8 of a bare Fastify route (`npm run bench`,
 * goal 1; through the route alone the figure was about 0.69).
 */
export function clientListLane(o: ClientListLaneOptions): Lane {
  return (req, res) => {
    if (req.method !== 'GET' || req.url !== o.path || req.headers.host === undefined) return false
    if (o.cors && req.headers.origin !== undefined) return false
    const kept = o.pages.keptDefault()
    if (kept === undefined || o.logsReads()) return false
    const started = o.count ? performance.now() : 0
    if (notModified(req.headers['if-none-match'], kept.etag)) {
      res.writeHead(304, o.cors ? { vary: 'Origin', etag: kept.etag } : { etag: kept.etag })
      res.end()
    } else {
      res.writeHead(200, {
        ...(o.cors ? { vary: 'Origin' } : {}),
        etag: kept.etag,
        'content-type': 'application/json; charset=utf-8',
        'content-length': kept.body.length,
      })
      res.end(kept.body)
    }
    o.count?.(res.statusCode, (performance.now() - started) / 1000)
    return true
  }
}
