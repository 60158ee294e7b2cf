import type { IncomingMessage, ServerResponse } from 'node:http'
import { type CachedBody, notModified } from './response-cache.js'

/** Answers a request when it can, before Fastify sees it; false leaves it to Fastify. */
export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean

export interface KeptPageLaneOptions {
  /** The page a query without parameters gets, when it is kept and known current; else undefined. */
  kept: () => CachedBody | undefined
  /**
   * Whether the route's auth hook would admit this request, decided from memory alone: the
   * headers the hook would add to the answer (the session's expiry), or undefined whenever that is
   * not known (the route then decides, and may refuse). No check when absent.
   */
  admit?: ((req: IncomingMessage) => Record<string, string> | undefined) | undefined
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

/**
 * The default page of a list, answered straight from Node's HTTP server when the route would
 * answer it the same way, byte for byte: the page is kept and known current without asking the
 * store, reads are not logged, and the caller is one the route's auth hook admits as things stand
 * in memory. Everything else (a page not kept yet, PostgreSQL while its notification connection
 * is down, debug logging, a CORS request, a session or policy not kept, a session whose sliding
 * expiry is due, any refusal) goes to the route.
 *
 * Speed path: routing, validation, hooks and Fastify's reply cost more than a kept page itself.
 * The client signer list (unauthenticated, what every client asks for first) went from about 0.69
 * to 0.8 of a bare Fastify route (`npm run bench`, goal 1); the admin lists' default pages (what a
 * console polls) gain the same way.
 */
export function keptPageLane(o: KeptPageLaneOptions): Lane {
  return (req, res) => {
    if (o.cors && req.headers.origin !== undefined) return false
    const kept = o.kept()
    if (kept === undefined || o.logsReads()) return false
    const added = o.admit ? o.admit(req) : undefined
    if (o.admit && added === undefined) return false
    const started = o.count ? performance.now() : 0
    if (notModified(req.headers['if-none-match'], kept.etag)) {
      res.writeHead(304, { ...(o.cors ? { vary: 'Origin' } : {}), ...added, etag: kept.etag })
      res.end()
    } else {
      res.writeHead(200, {
        ...(o.cors ? { vary: 'Origin' } : {}),
        ...added,
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

/**
 * The lanes of the server, by exact path: only a GET of a path with no query string, with a Host
 * header, is offered to one (the route answers everything else: HEAD, queries, a trailing slash).
 */
export class Lanes {
  private readonly byPath = new Map<string, Lane>()

  add(path: string, lane: Lane): void {
    if (this.byPath.has(path)) throw new Error(`a lane for ${path} exists already`)
    this.byPath.set(path, lane)
  }

  readonly lane: Lane = (req, res) => {
    if (req.method !== 'GET' || req.headers.host === undefined) return false
    const lane = this.byPath.get(req.url ?? '')
    return lane?.(req, res) === true
  }
}
