import { randomBytes } from 'node:crypto'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { DestinationStream, LoggerOptions } from 'pino'
import type { Config } from './config.js'
import { bootstrapAdmin } from './identities/bootstrap-admin.js'
import type { Resolver } from './jwt/jwks-fetch.js'
import { loggerOptions, redaction } from './logger.js'
import { installHttpMetrics } from './metrics/http.js'
import type { Metrics } from './metrics.js'
import { serverWithLane } from './node-server.js'
import { lazyChildLogger, writes } from './request-logger.js'
import { auditEventRoutes } from './routes/audit-events/index.js'
import { requireSession } from './routes/auth-hooks.js'
import { authPolicyRoutes, authPolicyRoutesOptions } from './routes/auth-policies/index.js'
import caCertsRoutes from './routes/cacerts/index.js'
import clientSignerRoutes from './routes/client-signers/index.js'
import { clientListLane, type Lane } from './routes/client-signers/lane.js'
import { ClientSignerPages } from './routes/client-signers/pages.js'
import {
  clientErrorHandler,
  frameworkErrors,
  installErrorHandling,
  requireHost,
} from './routes/error-handler.js'
import healthRoutes from './routes/health/index.js'
import {
  identityPasswordRoutes,
  identityRoutes,
  identityRoutesOptions,
} from './routes/identities/index.js'
import sessionRoutes from './routes/sessions/index.js'
import { signerRoutes, signerRoutesOptions } from './routes/signers/index.js'
import { signerKeyRoutes } from './routes/signers/keys.js'
import { signerToolRoutes } from './routes/signers/tools.js'
import versionRoutes from './routes/version/index.js'
import { createServices } from './services.js'
import { openStore } from './store/open-store.js'
import type { Store } from './store/types.js'

export interface BuildAppOptions {
  config: Config
  /** Pino options (merged with the redaction list) or false for silence. */
  logger?: false | (LoggerOptions & { stream?: DestinationStream })
  /** An open store; when absent the app opens `config.dbPath` and closes it on close. */
  store?: Store
  clock?: () => Date
  https?: { cert: Buffer; key: Buffer }
  /** The PEM chain `/.well-known/est/cacerts` offers over HTTPS (default: the chain in `https.cert`). */
  caPem?: string
  /** JWKS fetch timeout (5 s unless a test needs it shorter). */
  jwksFetchTimeoutMs?: number
  /** Name resolution for JWKS fetches (tests inject one so nothing leaves loopback). */
  resolver?: Resolver
  /** Bound of the verified-token cache (tests make it small). */
  verifiedCacheEntries?: number
  /** Called once when the bootstrap admin was created with a generated password. */
  onGeneratedAdminPassword?: (name: string, password: string) => void
  /** Prometheus metrics to count into (served on a listener of their own); absent: none counted. */
  metrics?: Metrics
}

/** Request ids: a random per-process prefix and a counter (unique, and no crypto call per request). */
function requestIds(): () => string {
  const prefix = randomBytes(6).toString('base64url')
  let n = 0
  return () => `${prefix}${(n++).toString(36)}`
}

export const MANAGEMENT_PREFIX = '/edge/management/v1'
export const CLIENT_PREFIX = '/edge/client/v1'

/** Builds the controller: every server option, plugin and route, ready to inject or listen. */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config } = options
  // Converted first: a bundle that holds no certificate stops the build before anything opens.
  const pkcs7 = options.https
    ? (await import('./routes/cacerts/ca-bundle.js')).pkcs7CertsOnly(
        options.caPem ?? options.https.cert.toString('utf8'),
      )
    : undefined
  const clock = options.clock ?? (() => new Date())
  const logger =
    options.logger === undefined
      ? loggerOptions(config.logLevel)
      : options.logger === false
        ? false
        : { ...options.logger, ...redaction() }

  const nodeServer = {
    // Node answers a request without Host with an empty 400; the onRequest hook answers instead.
    requireHostHeader: false,
    // Given at creation: Node checks these deadlines every connectionsCheckingInterval (30 s
    // unless set), so a slow client would be cut up to that much late.
    headersTimeout: Math.ceil(config.httpHeadersTimeoutMs),
    requestTimeout: Math.ceil(config.httpRequestTimeoutMs),
    connectionsCheckingInterval: 500,
  }
  const nextId = requestIds()
  let lane: Lane | undefined // set once the routes it stands in for exist
  const app = Fastify({
    logger,
    serverFactory: serverWithLane(
      {
        server: options.https ? { ...options.https, ...nodeServer } : nodeServer,
        https: options.https !== undefined,
        keepAliveTimeoutMs: Math.ceil(config.httpKeepAliveTimeoutMs),
        requestTimeoutMs: nodeServer.requestTimeout,
      },
      () => lane,
    ),
    // Read by Fastify only to name the listening address's scheme.
    ...(options.https ? { https: options.https } : {}),
    bodyLimit: 1024 * 1024,
    // One access-log line per request comes from the onResponse hook below instead.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: nextId,
    ...(logger === false ? {} : { childLoggerFactory: lazyChildLogger }),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
    frameworkErrors,
    clientErrorHandler(err, socket) {
      answerClientError(err, socket)
    },
  }).withTypeProvider<TypeBoxTypeProvider>()
  const answerClientError = clientErrorHandler(nextId, app.log)

  installErrorHandling(app)
  const { metrics } = options
  if (metrics) installHttpMetrics(app, metrics)
  // Callback-style hooks: they run on every request, and skip a promise each.
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      requireHost(request)
      done()
    } catch (err) {
      done(err as Error) // requireHost throws only AppError
    }
  })
  app.decorateRequest('auth', null)

  // An empty JSON body reads as "no body": login accepts a bare POST with only a bearer token.
  const jsonParser = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined)
    return jsonParser(request, body as string, done) // parseAs: 'string'
  })

  // Writes, logins and every refusal or failure are logged at info; successful reads (the bulk of
  // the traffic, counted by the metrics) only at debug, so the log stays readable and cheap.
  app.addHook('onResponse', (request, reply, done) => {
    const read = request.method === 'GET' || request.method === 'HEAD'
    const level = read && reply.statusCode < 400 ? 'debug' : 'info'
    if (!writes(request.log, level)) return done()
    request.log[level](
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        remoteAddress: request.ip,
        responseTime: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    )
    done()
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'External JWT signer controller',
        description: 'Edge management and client APIs for external JWT signers',
        version: '0.1.0',
      },
    },
  })

  const admin = async (s: Store) => {
    const generated = await bootstrapAdmin(s, clock, config.adminUser, config.adminPassword)
    if (generated !== undefined) options.onGeneratedAdminPassword?.(config.adminUser, generated)
  }
  let store: Store
  if (options.store) {
    store = options.store
    await admin(store)
  } else {
    store = await openStore(
      {
        db: config.dbPath,
        poolSize: config.dbPoolSize,
        connectTimeoutMs: config.dbConnectTimeoutMs,
        statementTimeoutMs: config.dbStatementTimeoutMs,
      },
      app.log,
      admin,
    )
    app.addHook('onClose', () => store.close())
  }

  const services = await createServices({
    store,
    config,
    clock,
    log: app.log,
    jwksFetchTimeoutMs: options.jwksFetchTimeoutMs,
    resolver: options.resolver,
    verifiedCacheEntries: options.verifiedCacheEntries,
  })
  app.addHook('onClose', services.close)
  const { signers, identities, policies } = services
  const auth = metrics ? { ...services.auth, onSecondary: metrics.secondary } : services.auth
  metrics?.watch({
    sessions: () => store.repos.sessions.count(),
    keys: services.keys,
    cache: services.verifier.cache,
    verifierStats: services.verifier.stats,
  })

  const m = MANAGEMENT_PREFIX
  await app.register(healthRoutes, { ping: services.health })
  await app.register(versionRoutes, { clientPath: CLIENT_PREFIX, managementPath: m })
  await app.register(caCertsRoutes, { pkcs7 })
  for (const path of ['external-jwt-signers', 'ext-jwt-signers']) {
    await app.register(signerRoutes, {
      prefix: `${m}/${path}`,
      ...signerRoutesOptions(signers, auth),
    })
    await app.register(signerKeyRoutes, { prefix: `${m}/${path}`, keys: services.signerKeys, auth })
    await app.register(signerToolRoutes, {
      prefix: `${m}/${path}`,
      auth: requireSession(auth, { admin: true }),
      discover: services.discover,
      explain: services.explain,
    })
  }
  await app.register(identityRoutes, {
    prefix: `${m}/identities`,
    ...identityRoutesOptions(identities, policies, auth),
  })
  await app.register(identityPasswordRoutes, { prefix: `${m}/identities`, identities, auth })
  await app.register(authPolicyRoutes, {
    prefix: `${m}/auth-policies`,
    ...authPolicyRoutesOptions(policies, auth),
  })
  for (const prefix of [m, CLIENT_PREFIX]) {
    await app.register(sessionRoutes, {
      prefix,
      auth,
      passwords: {
        credentials: (name: string) => identities.credentials(name),
        allowsPrimary: (identity, method) => policies.allowsPrimary(identity, method),
      },
      rateLimit: config.authRateLimit,
      clock,
      onLogin: metrics?.login,
    })
  }
  const clientPages = new ClientSignerPages(signers)
  await app.register(clientSignerRoutes, { prefix: CLIENT_PREFIX, pages: clientPages })
  lane = clientListLane({
    path: `${CLIENT_PREFIX}/external-jwt-signers`,
    pages: clientPages,
    // Successful reads are logged at debug by the onResponse hook above; without a logger, never.
    logsReads: logger === false ? () => false : () => writes(app.log, 'debug'),
    count: metrics
      ? (status, seconds) =>
          metrics.request('GET', `${CLIENT_PREFIX}/external-jwt-signers`, status, seconds)
      : undefined,
  })
  await app.register(auditEventRoutes, { prefix: `${m}/audit-events`, audit: services.audit, auth })

  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  )

  await app.ready()
  return app
}
