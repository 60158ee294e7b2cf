import { randomBytes } from 'node:crypto'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { DestinationStream, LoggerOptions } from 'pino'
import type { Config } from './config.js'
import { bootstrapAdmin } from './identities/bootstrap-admin.js'
import { IdentityService } from './identities/identity-service.js'
import { SessionService } from './identities/session-service.js'
import { JwksFetcher, type Resolver } from './jwt/jwks-fetch.js'
import { SignerKeys } from './jwt/signer-keys.js'
import { urlRefusal } from './jwt/ssrf-policy.js'
import { loggerOptions, REDACT_PATHS } from './logger.js'
import { AuthPolicyService } from './policies/auth-policy-service.js'
import { authPolicyRoutes, authPolicyRoutesOptions } from './routes/auth-policies/index.js'
import clientSignerRoutes from './routes/client-signers/index.js'
import { installErrorHandling } from './routes/error-handler.js'
import healthRoutes from './routes/health/index.js'
import {
  identityPasswordRoutes,
  identityRoutes,
  identityRoutesOptions,
} from './routes/identities/index.js'
import sessionRoutes from './routes/sessions/index.js'
import { signerRoutes, signerRoutesOptions } from './routes/signers/index.js'
import { SignerService } from './signers/signer-service.js'
import { AuthPolicyRepository } from './store/auth-policy-repository.js'
import { type Db, openDatabase } from './store/db.js'
import { type IdentityRecord, IdentityRepository } from './store/identity-repository.js'
import { SessionRepository } from './store/session-repository.js'

export interface BuildAppOptions {
  config: Config
  /** Pino options (merged with the redaction list) or false for silence. */
  logger?: false | (LoggerOptions & { stream?: DestinationStream })
  /** An open database; when absent the app opens `config.dbPath` and closes it on close. */
  db?: Db
  clock?: () => Date
  https?: { cert: Buffer; key: Buffer }
  /** JWKS fetch timeout (5 s unless a test needs it shorter). */
  jwksFetchTimeoutMs?: number
  /** Name resolution for JWKS fetches (tests inject one so nothing leaves loopback). */
  resolver?: Resolver
  /** Called once when the bootstrap admin was created with a generated password. */
  onGeneratedAdminPassword?: (name: string, password: string) => void
}

export const MANAGEMENT_PREFIX = '/edge/management/v1'
export const CLIENT_PREFIX = '/edge/client/v1'

/** Builds the controller: every server option, plugin and route, ready to inject or listen. */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config } = options
  const clock = options.clock ?? (() => new Date())
  const logger =
    options.logger === undefined
      ? loggerOptions(config.logLevel)
      : options.logger === false
        ? false
        : { ...options.logger, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }

  const app = Fastify({
    logger,
    ...(options.https ? { https: options.https } : {}),
    bodyLimit: 1024 * 1024,
    // One access-log line per request comes from the onResponse hook below instead.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomBytes(8).toString('base64url'),
    requestTimeout: 30_000,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  installErrorHandling(app)
  app.decorateRequest('auth', null)

  // An empty JSON body reads as "no body": login accepts a bare POST with only a bearer token.
  const jsonParser = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined)
    return jsonParser(request, body as string, done) // parseAs: 'string'
  })

  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        remoteAddress: request.ip,
        responseTime: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    )
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

  const db = options.db ?? openDatabase(config.dbPath, app.log)
  if (!options.db) app.addHook('onClose', async () => db.close())

  const generated = await bootstrapAdmin(db, clock, config.adminUser, config.adminPassword)
  if (generated !== undefined) options.onGeneratedAdminPassword?.(config.adminUser, generated)

  const sessionRepository = new SessionRepository(db)
  const sessions = new SessionService({
    sessions: sessionRepository,
    identities: new IdentityRepository(db),
    clock,
    timeoutMs: config.sessionTimeoutMs,
  })
  const policyRepository = new AuthPolicyRepository(db)
  const fetchPolicy = { allowHttp: config.jwksAllowHttp, blockPrivate: config.jwksBlockPrivate }
  const signers = new SignerService({
    db,
    clock,
    referenceCheck: (id) => policyRepository.signerReference(id),
    jwksUrlCheck: (url) => urlRefusal(url, fetchPolicy),
  })
  const policies = new AuthPolicyService(db, signers.repository, clock)
  const fetcher = new JwksFetcher({
    policy: fetchPolicy,
    timeoutMs: options.jwksFetchTimeoutMs ?? 5000,
    ...(options.resolver ? { resolver: options.resolver } : {}),
  })
  const keys = new SignerKeys({
    fetcher,
    clock,
    cooldownMs: config.jwksCooldownMs,
    maxAgeMs: config.jwksMaxAgeMs,
    log: app.log,
  })
  keys.load(signers.repository.all())
  signers.onChange((change) => keys.apply(change))
  app.addHook('onClose', async () => {
    keys.close()
    await fetcher.close()
  })
  const identities = new IdentityService(db, policyRepository, sessions, clock)
  const allowsPrimary = (identity: IdentityRecord, method: 'updb') =>
    method === 'updb' && identities.policyOf(identity)?.updbAllowed === true

  const lookup = {
    byId: (id: string) => identities.repository.get(id),
    byExternalId: (externalId: string) => identities.repository.getByExternalId(externalId),
    policy: (id: string) => policyRepository.get(id),
  }

  const m = MANAGEMENT_PREFIX
  await app.register(healthRoutes, { db })
  for (const path of ['external-jwt-signers', 'ext-jwt-signers']) {
    await app.register(signerRoutes, {
      prefix: `${m}/${path}`,
      ...signerRoutesOptions(signers, sessions),
    })
  }
  await app.register(identityRoutes, {
    prefix: `${m}/identities`,
    ...identityRoutesOptions(identities, sessions),
  })
  await app.register(identityPasswordRoutes, { prefix: `${m}/identities`, identities, sessions })
  await app.register(authPolicyRoutes, {
    prefix: `${m}/auth-policies`,
    ...authPolicyRoutesOptions(policies, sessions),
  })
  for (const prefix of [m, CLIENT_PREFIX]) {
    await app.register(sessionRoutes, {
      prefix,
      sessions,
      identities: identities.repository,
      allowsPrimary,
      extJwt: { keys, lookup, verify: { clock, clockToleranceMs: config.jwtClockToleranceMs } },
      rateLimit: config.authRateLimit,
      clock,
    })
  }
  await app.register(clientSignerRoutes, { prefix: CLIENT_PREFIX, signers })

  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  )

  await app.ready()
  return app
}
