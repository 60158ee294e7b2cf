import { randomBytes } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { DestinationStream, LoggerOptions } from 'pino'
import { systemClock } from './clock.js'
import type { Config } from './config.js'
import { controllerSelf } from './controllers/self.js'
import type { ControllerDirectory } from './enrollment/controllers.js'
import type { EnrollmentCa } from './enrollment/enrollment-ca.js'
import { bootstrapAdmin } from './identities/bootstrap-admin.js'
import type { Resolver } from './jwt/jwks-fetch.js'
import { logThreadFailures, signatureThreads } from './jwt/signature-threads.js'
import { loggerOptions, redaction } from './logger.js'
import { httpMetrics } from './metrics/http.js'
import type { Metrics } from './metrics.js'
import { serverWithLane } from './node-server.js'
import { consolePages } from './plugins/console.js'
import { corsPolicy } from './plugins/cors.js'
import { errorHandling } from './plugins/error-handling.js'
import { jsonBody } from './plugins/json-body.js'
import { openapi } from './plugins/openapi.js'
import { requestLog } from './plugins/request-log.js'
import { lazyChildLogger, writes } from './request-logger.js'
import { admitsKeptAdmin, authentication } from './routes/auth-hooks.js'
import caCertsRoutes from './routes/cacerts/index.js'
import { clientApi } from './routes/client-api.js'
import { ClientSignerPages } from './routes/client-signers/pages.js'
import { clientErrorHandler, frameworkErrors } from './routes/error-handler.js'
import healthRoutes from './routes/health/index.js'
import { type KeptPageLaneOptions, keptPageLane, type Lane, Lanes } from './routes/lanes.js'
import { managementApi } from './routes/management-api.js'
import { LoginLimiter } from './routes/rate-limit.js'
import type { CachedBody } from './routes/response-cache.js'
import type { SessionRoutesOptions } from './routes/sessions/index.js'
import versionRoutes from './routes/version/index.js'
import { createServices } from './services.js'
import { Lifecycle } from './shutdown.js'
import type { Store } from './store/contract.js'
import { openStore } from './store/open-store.js'

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
  /**
   * Given the password when the bootstrap admin gets a generated one, before that is stored: if it
   * throws, no admin is stored and the app does not start (see bootstrapAdmin).
   */
  onGeneratedAdminPassword?: (name: string, password: string) => void
  /** Signs enrollment CSRs (`CTRL_ENROLL_CA_*`); absent: CSRs are refused. */
  enrollCa?: EnrollmentCa
  /** The controllers enrollment answers list; default: this instance alone. */
  controllers?: ControllerDirectory
  /** Prometheus metrics to count into (served on a listener of their own); absent: none counted. */
  metrics?: Metrics
  /** The shutdown phase `server.ts` moves on signals (readiness, `Connection: close`). */
  lifecycle?: Lifecycle
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
  const { config, metrics } = options
  // Converted first: a bundle that holds no certificate stops the build before anything opens.
  const pkcs7 = options.https
    ? (await import('./routes/cacerts/ca-bundle.js')).pkcs7CertsOnly(
        options.caPem ?? options.https.cert.toString('utf8'),
      )
    : undefined
  const clock = options.clock ?? systemClock
  const lanes = new Lanes() // each added by the route it stands in for
  const lifecycle = options.lifecycle ?? new Lifecycle()
  const app = createFastify(options, lifecycle, lanes.lane)

  // Cross-cutting parts, for every route registered after them.
  await app.register(errorHandling)
  if (config.corsOrigins.length > 0) await app.register(corsPolicy, { origins: config.corsOrigins })
  await app.register(jsonBody)
  await app.register(requestLog)
  if (metrics) await app.register(httpMetrics, { metrics })
  await app.register(authentication)
  await app.register(openapi)
  // Before the store opens: a console folder that cannot serve stops the start first.
  if (config.consoleDir) await app.register(consolePages, { dir: config.consoleDir })

  const store = await storeOf(app, options, clock)
  const services = await createServices({
    store,
    config,
    clock,
    log: app.log,
    jwksFetchTimeoutMs: options.jwksFetchTimeoutMs,
    resolver: options.resolver,
    verifiedCacheEntries: options.verifiedCacheEntries,
    controllers: options.controllers,
    enrollCa: options.enrollCa,
    self: controllerSelf(config, options.https?.cert),
  })
  app.addHook('onClose', services.close)
  if (config.port === 0) {
    // Any free port: the list learns the real one once the listener has it.
    app.addHook('onListen', async () => {
      const address = app.server.address()
      if (typeof address !== 'object' || !address) return
      await services.controllers.moveTo(controllerSelf(config, options.https?.cert, address.port))
    })
  }
  metrics?.watch({
    sessions: () => store.repos.sessions.count(),
    keys: services.keys,
    cache: services.verifier.cache,
    verifierStats: services.verifier.stats,
    signatureStats: signatureThreads.stats,
    loginCommits: services.sessions.commitStats,
  })
  const auth = metrics ? { ...services.auth, onSecondary: metrics.secondary } : services.auth
  const sessions: SessionRoutesOptions = {
    auth,
    passwords: services.passwords,
    // One limiter for the login routes of both prefixes.
    limiter: new LoginLimiter(
      { perAddress: config.authRateLimit, perIdentity: config.authIdentityRateLimit },
      clock,
    ),
    clock,
    onLogin: metrics?.login,
  }
  const pages = new ClientSignerPages(services.signers, config.clientSignerFields)
  // What every lane shares: a kept page answered before Fastify, counted as its route would be.
  const keptPage = (
    path: string,
    kept: () => CachedBody | undefined,
    admit?: KeptPageLaneOptions['admit'],
  ) =>
    lanes.add(
      path,
      keptPageLane({
        kept,
        admit,
        cors: config.corsOrigins.length > 0,
        // Successful reads are logged at debug by the request log; without a logger, never.
        logsReads: options.logger === false ? () => false : () => writes(app.log, 'debug'),
        count: metrics
          ? (status, seconds) => metrics.request('GET', path, status, seconds)
          : undefined,
      }),
    )
  await warnUnusableSigners(services, config, app.log)

  // The APIs.
  await app.register(healthRoutes, { ping: services.health, ready: () => lifecycle.ready })
  await app.register(versionRoutes, {
    clientPath: CLIENT_PREFIX,
    managementPath: MANAGEMENT_PREFIX,
  })
  await app.register(caCertsRoutes, { pkcs7 })
  await app.register(managementApi, {
    prefix: MANAGEMENT_PREFIX,
    services,
    auth,
    sessions,
    // The admin lists' default pages, for the admins the auth hook would admit as things stand.
    keptPage: (path, kept) => keptPage(path, kept, (req) => admitsKeptAdmin(auth, req.headers)),
  })
  const enroll = {
    enrollment: services.enrollment,
    trustBundlePem: options.https
      ? (options.caPem ?? options.https.cert.toString('utf8'))
      : undefined,
    limiter: sessions.limiter,
    onEnroll: metrics?.enrollment,
  }
  await app.register(clientApi, {
    prefix: CLIENT_PREFIX,
    sessions,
    pages,
    enroll,
    controllers: services.controllers,
  })
  // The client signer list's default page: unauthenticated, asked for by every client first.
  keptPage(`${CLIENT_PREFIX}/external-jwt-signers`, () => pages.keptDefault())

  // A signature thread given up is worth a line: its checks run on the libuv pool meanwhile. The
  // threads are the process's: an app that does not come up leaves no listener behind.
  const unwatchThreads = logThreadFailures(signatureThreads, app.log)
  app.addHook('onClose', async () => {
    unwatchThreads()
  })
  try {
    await app.ready()
  } catch (err) {
    unwatchThreads()
    throw err
  }
  return app
}

/** Under the seed's client list, says once that OpenZiti's clients cannot use what it leaves out. */
async function warnUnusableSigners(
  services: Awaited<ReturnType<typeof createServices>>,
  config: Config,
  log: FastifyInstance['log'],
): Promise<void> {
  if (config.clientSignerFields !== 'seed') return
  const signers = (await services.store.repos.signers.all()).filter(
    (s) => s.enabled && (s.clientId !== null || s.enrollToTokenEnabled || s.enrollToCertEnabled),
  )
  if (signers.length === 0) return
  log.warn(
    { signerIds: signers.map((s) => s.id), setting: 'CTRL_CLIENT_SIGNER_FIELDS' },
    'OpenZiti clients will not be able to use these signers: the client signer list leaves out clientId and enrollment (set CTRL_CLIENT_SIGNER_FIELDS=openziti)',
  )
}

/** Fastify with every server option: the same in tests and in production. */
function createFastify(options: BuildAppOptions, lifecycle: Lifecycle, lane: Lane) {
  const { config } = options
  const logger =
    options.logger === undefined
      ? loggerOptions(config.logLevel)
      : options.logger === false
        ? false
        : { ...options.logger, ...redaction() }
  const nodeServer = {
    // Node answers a request without Host with an empty 400; the error-handling plugin answers instead.
    requireHostHeader: false,
    // Given at creation: Node checks these deadlines every connectionsCheckingInterval (30 s
    // unless set), so a slow client would be cut up to that much late.
    headersTimeout: Math.ceil(config.httpHeadersTimeoutMs),
    requestTimeout: Math.ceil(config.httpRequestTimeoutMs),
    connectionsCheckingInterval: 500,
  }
  const nextId = requestIds()
  const app = Fastify({
    logger,
    serverFactory: serverWithLane(
      {
        // A TLS handshake comes before the request head, and Node gives it 120 s of its own: the
        // headers timeout bounds it too (a connection stalled in it would also hold shutdown).
        server: options.https
          ? { ...options.https, ...nodeServer, handshakeTimeout: nodeServer.headersTimeout }
          : nodeServer,
        https: options.https !== undefined,
        keepAliveTimeoutMs: Math.ceil(config.httpKeepAliveTimeoutMs),
        requestTimeoutMs: nodeServer.requestTimeout,
        closing: () => lifecycle.closing,
      },
      lane,
    ),
    // Read by Fastify only to name the listening address's scheme.
    ...(options.https ? { https: options.https } : {}),
    bodyLimit: 1024 * 1024,
    // Behind the balancers named in CTRL_TRUST_PROXY, `request.ip` is the client their
    // X-Forwarded-For names; from anywhere else the header is ignored (a client cannot pick its
    // own address for the login limits).
    ...(config.trustProxy.length > 0 ? { trustProxy: config.trustProxy } : {}),
    // OpenZiti's console reads `<list>/<id>//`: a trailing slash and repeated slashes reach the
    // same route, with no redirect, as on OpenZiti's controller.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    // While closing, a request that still arrives on a kept-alive connection is served (with
    // `Connection: close`), never refused with Fastify's own 503 body outside the edge envelope.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // One access-log line per request comes from the request-log plugin instead.
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
  // A request begun before closing closes its connection too: the listener set no header for it.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (lifecycle.closing) reply.header('connection', 'close')
    done(null, payload)
  })
  return app
}

/** The store handed in, or the one `config.dbPath` names (closed with the app); with its admin. */
async function storeOf(
  app: FastifyInstance,
  options: BuildAppOptions,
  clock: () => Date,
): Promise<Store> {
  const { config } = options
  const admin = async (s: Store) => {
    const deliver = options.onGeneratedAdminPassword
    await bootstrapAdmin(
      s,
      clock,
      config.adminUser,
      config.adminPassword,
      app.log,
      deliver && ((generated) => deliver(config.adminUser, generated)),
    )
  }
  if (options.store) {
    await admin(options.store)
    return options.store
  }
  const store = await openStore(
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
  return store
}
