import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { AppError } from '../errors.js'

/**
 * A per-client-address limit of requests per second (a fixed one-second window). The window's
 * counters are dropped as a whole when the second changes, so memory stays bounded by one second
 * of distinct addresses.
 */
export function rateLimit(perSecond: number, clock: () => Date): onRequestAsyncHookHandler {
  let window = 0
  let counts = new Map<string, number>()
  return async (request: FastifyRequest) => {
    const second = Math.floor(clock().getTime() / 1000)
    if (second !== window) {
      window = second
      counts = new Map()
    }
    const n = (counts.get(request.ip) ?? 0) + 1
    counts.set(request.ip, n)
    if (n > perSecond) {
      request.log.warn({ remoteAddress: request.ip }, 'authentication rate limit exceeded')
      throw new AppError('RATE_LIMITED', { headers: { 'retry-after': '1' } })
    }
  }
}
