import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Metrics } from '../metrics.js'

export interface MetricsListener {
  /** `http://HOST:PORT/metrics`, with the port actually bound. */
  url: string
  close: () => Promise<void>
}

/**
 * Serves `GET /metrics` (also HEAD) in the Prometheus text format on a listener of its own, apart
 * from the API port, without authentication: bind it to an address only the scraper reaches.
 */
export async function startMetricsListener(
  metrics: Metrics,
  host: string,
  port: number,
): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics\n')
      return
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end()
      return
    }
    metrics.scrape().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'content-type': contentType })
        res.end(req.method === 'HEAD' ? undefined : body)
      },
      () => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n')
      },
    )
  })
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const bound = (server.address() as AddressInfo).port // a TCP listener
  const shown = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shown}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
