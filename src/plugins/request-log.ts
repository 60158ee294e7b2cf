import fp from 'fastify-plugin'
import { loggedUrl, writes } from '../request-logger.js'

/**
 * One access-log line per request. Writes, logins and every refusal or failure are logged at info;
 * successful reads (the bulk of the traffic, counted by the metrics) only at debug, so the log
 * stays readable and cheap. The URL's query keeps only the API's own parameters (`loggedUrl`).
 */
export const requestLog = fp(
  async (app) => {
    app.addHook('onResponse', (request, reply, done) => {
      const read = request.method === 'GET' || request.method === 'HEAD'
      const level = read && reply.statusCode < 400 ? 'debug' : 'info'
      if (!writes(request.log, level)) return done()
      request.log[level](
        {
          method: request.method,
          url: loggedUrl(request.url),
          statusCode: reply.statusCode,
          remoteAddress: request.ip,
          responseTime: Math.round(reply.elapsedTime * 100) / 100,
        },
        'request completed',
      )
      done()
    })
  },
  { name: 'request-log' },
)
