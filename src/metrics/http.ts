import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Metrics } from '../metrics.js'

// Node's parser admits a few dozen methods; the rarer ones share one label value.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

const method = (request: FastifyRequest) => (METHODS.has(request.method) ? request.method : 'OTHER')
const route = (request: FastifyRequest) =>
  request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched')

/**
 * Counts every answered request by its route pattern (`request.routeOptions.url`, never the raw
 * URL), or `unmatched` when no route took it, so unknown URLs cannot grow the label set. A request whose
 * client went away before its answer is counted under the status `aborted`.
 */
export const httpMetrics = fp<{ metrics: Metrics }>(
  async (app, { metrics }) => {
    // A callback hook, not an async one: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      // Counted by onRequestAbort instead: the answer never reached the client.
      if (!request.raw.aborted) {
        metrics.request(method(request), route(request), reply.statusCode, reply.elapsedTime / 1000)
      }
      done()
    })
    app.addHook('onRequestAbort', (request, done) => {
      metrics.request(method(request), route(request), 'aborted', 0)
      done()
    })
  },
  { name: 'http-metrics' },
)
