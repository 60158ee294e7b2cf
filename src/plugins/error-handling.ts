import fp from 'fastify-plugin'
import { installErrorHandling, requireHost } from '../routes/error-handler.js'

/** Every error and unknown route answered in the edge API's envelope; HTTP/1.1 without `Host` refused. */
export const errorHandling = fp(
  async (app) => {
    installErrorHandling(app)
    // A callback hook: it runs on every request, and skips a promise each.
    app.addHook('onRequest', (request, _reply, done) => {
      try {
        requireHost(request)
        done()
      } catch (err) {
        done(err as Error) // requireHost throws only AppError
      }
    })
  },
  { name: 'error-handling' },
)
