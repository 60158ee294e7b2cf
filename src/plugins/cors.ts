import cors from '@fastify/cors'
import fp from 'fastify-plugin'

export interface CorsOptions {
  /** Exact origins (`CTRL_CORS_ORIGINS`), never `*` (refused by the configuration). */
  origins: string[]
}

/**
 * CORS for a console hosted on another origin (`CTRL_CORS_ORIGINS`): a listed origin's preflights
 * and answers carry what a browser needs for the console's requests, and may read the `zt-session`
 * header a login answers with and the others listed below; any other origin gets no CORS header at
 * all (its preflight is 404).
 */
export const corsPolicy = fp<CorsOptions>(
  async (app, o) => {
    const listed = new Set(o.origins)
    await app.register(cors, {
      // `false` for an unlisted origin adds no header at all; a listed one is echoed back.
      origin: (origin, done) =>
        done(null, origin !== undefined && listed.has(origin) ? origin : false),
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      // A browser client may revalidate a list (If-None-Match) and name an enrolling token's
      // signer (issue 21's header), and read what the answers carry beyond the body: the
      // session and its expiry, the challenges, the ETag, when to retry.
      allowedHeaders: [
        'content-type',
        'zt-session',
        'authorization',
        'if-none-match',
        'ziti-token-issuer-id',
      ],
      exposedHeaders: [
        'zt-session',
        'expiration-seconds',
        'expires-at',
        'www-authenticate',
        'etag',
        'retry-after',
      ],
      maxAge: 600,
    })
  },
  { name: 'cors' },
)
