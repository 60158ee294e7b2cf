import fp from 'fastify-plugin'
import type { Metrics } from '../metrics.js'

// Node's parser admits a few dozen methods; the rarer ones share one label value.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/**
 * Counts every answered request by its route pattern (`request.routeOptions.url`, never the raw
 * URL), or `unmatched` when no route took it, so unknown URLs cannot grow the label set.
 */
export const httpMetrics = fp<{ metrics: Metrics }>(
  async (app, { metrics }) => {
    // A callback hook, not an async one: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      const method = METHODS.has(request.method) ? request.method : 'OTHER'
      const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched')
      metrics.request(method, route, reply.statusCode, reply.elapsedTime / 1000)
      done()
    })
  },
  { name: 'http-metrics' },
)
