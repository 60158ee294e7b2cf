import './v8-flags.js' // first: it must run before any WebAssembly is compiled
import { randomBytes } from 'node:crypto'
import {
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { dirname, resolve } from 'node:path'
import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import type { EnrollmentCa } from './enrollment/enrollment-ca.js'
import { caughtMessage } from './errors.js'
import { turnBuffered } from './logger.js'
import type { MetricsListener } from './metrics/listener.js'
import { stopAccepting } from './node-server.js'
import { Lifecycle, shutdownInOrder } from './shutdown.js'
import { isPostgresUrl } from './store/open-store.js'

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`invalid setting: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }

  let https: { cert: Buffer; key: Buffer } | undefined
  if (config.tlsCertPath && config.tlsKeyPath) {
    try {
      https = { cert: readFileSync(config.tlsCertPath), key: readFileSync(config.tlsKeyPath) }
    } catch (err) {
      process.stderr.write(`invalid setting: CTRL_TLS_CERT/CTRL_TLS_KEY: ${caughtMessage(err)}\n`)
      process.exit(1)
    }
  }

  let caPem: string | undefined
  if (https) {
    const source = config.tlsCaPath ?? config.tlsCertPath
    const name = config.tlsCaPath ? 'CTRL_TLS_CA' : 'CTRL_TLS_CERT'
    try {
      caPem = config.tlsCaPath
        ? readFileSync(config.tlsCaPath, 'utf8')
        : https.cert.toString('utf8')
      // Loaded only when serving TLS: the x509 library is large, and plain HTTP never needs it.
      const { pkcs7CertsOnly } = await import('./routes/cacerts/ca-bundle.js')
      pkcs7CertsOnly(caPem)
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err)
      process.stderr.write(`invalid setting: ${name}: ${source}: ${reason}\n`)
      process.exit(1)
    }
  }

  let enrollCa: EnrollmentCa | undefined
  if (config.enrollCaCertPath && config.enrollCaKeyPath) {
    try {
      // Loaded only when configured, as the CA bundle above.
      const { EnrollmentCa } = await import('./enrollment/enrollment-ca.js')
      enrollCa = await EnrollmentCa.load(
        readFileSync(config.enrollCaCertPath, 'utf8'),
        readFileSync(config.enrollCaKeyPath, 'utf8'),
      )
    } catch (err) {
      process.stderr.write(
        `invalid setting: CTRL_ENROLL_CA_CERT/CTRL_ENROLL_CA_KEY: ${caughtMessage(err)}\n`,
      )
      process.exit(1)
    }
  }

  // Log lines are written to stdout synchronously, those of one event-loop turn together (see
  // turnBuffered): nothing waits on the thread pool, and shutdown and fatal errors flush what is
  // pending. The asynchronous mode cost more under load: while one write waited on the thread
  // pool, each new line was appended to a pending string that was then measured, and so copied
  // whole, again (about 14 KB copied per login, 10% of the login rate).
  const logStream = turnBuffered(pino.destination({ dest: 1, sync: true }))
  // Whatever ends the process (the shutdown's last line is logged after the close), nothing
  // pending is lost: exit listeners run synchronously before it ends.
  process.on('exit', () => logStream.flushSync())
  // prom-client is loaded only when metrics are on.
  const metrics =
    config.metricsPort === undefined ? undefined : (await import('./metrics.js')).createMetrics()
  const lifecycle = new Lifecycle()
  const app = await buildApp({
    config,
    lifecycle,
    logger: { level: config.logLevel, stream: logStream },
    ...(metrics ? { metrics } : {}),
    ...(https ? { https } : {}),
    ...(caPem === undefined ? {} : { caPem }),
    ...(enrollCa ? { enrollCa } : {}),
    onGeneratedAdminPassword: (name, password) =>
      tellGeneratedPassword(config.dbPath, name, password),
  })

  let metricsListener: MetricsListener | undefined
  const close = async () => {
    await metricsListener?.close()
    await app.close()
    logStream.flushSync()
  }
  // Errors only: the signals follow the order below, which a second signal must not cut short.
  closeWithGrace({ delay: 10_000, skip: ['SIGTERM', 'SIGINT'] }, async ({ err }) => {
    if (err) app.log.error({ err }, 'closing after an error')
    await close()
  })
  const shutdown = shutdownInOrder({
    lifecycle,
    delayMs: config.shutdownDelayMs,
    timeoutMs: config.shutdownTimeoutMs,
    log: app.log,
    stopAccepting: (graceMs) => stopAccepting(app.server, graceMs),
    close,
    forceClose: () => app.server.closeAllConnections(),
  })
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      shutdown(signal).then(
        () => process.exit(0),
        (err: unknown) => {
          app.log.error({ err }, 'shutdown failed')
          logStream.flushSync()
          process.exit(1)
        },
      )
    })
  }

  await app.listen({ host: config.host, port: config.port })
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  app.log.info(`listening on ${https ? 'https' : 'http'}://${host}:${port}`)
  if (metrics && config.metricsPort !== undefined) {
    const { startMetricsListener } = await import('./metrics/listener.js')
    metricsListener = await startMetricsListener(metrics, config.metricsHost, config.metricsPort)
    app.log.info(`metrics on ${metricsListener.url}`)
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `controller failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  )
  process.exit(1)
})

/**
 * Writes `text` to `file` as a new file only this user can read: made beside it (exclusively, never
 * through a link), then renamed over it. Writing into a file that was there would keep its mode
 * until a chmod, and reach anyone who holds it open or whatever a link there points to.
 */
function writePrivateFile(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  const fd = openSync(
    temporary,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  )
  try {
    try {
      writeFileSync(fd, text)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(temporary, file)
    // The rename itself is on disk before the admin is stored, or a crash could lose the file.
    const folder = openSync(dirname(file), constants.O_RDONLY)
    try {
      fsyncSync(folder)
    } finally {
      closeSync(folder)
    }
  } catch (err) {
    rmSync(temporary, { force: true })
    throw err
  }
}

/**
 * Where a generated admin password goes: a file only this user can read, beside the SQLite
 * database (`data/` of the working directory for PostgreSQL), never stderr, which services send to
 * their log collectors. When that file cannot be written, it throws: the admin is then not stored
 * (bootstrapAdmin), and the start fails saying what to do.
 */
function tellGeneratedPassword(dbPath: string, name: string, password: string): void {
  const file = resolve(
    isPostgresUrl(dbPath) || dbPath === ':memory:' ? 'data' : dirname(dbPath),
    'admin-password',
  )
  try {
    mkdirSync(dirname(file), { recursive: true })
    writePrivateFile(file, `${password}\n`)
  } catch (err) {
    // Never on stderr (services send it to their logs): the admin is not created, start fails.
    throw new Error(
      `CTRL_ADMIN_PASSWORD is unset and the generated admin password could not be written to ${file} ` +
        `(${caughtMessage(err)}): set CTRL_ADMIN_PASSWORD, or make that folder writable`,
    )
  }
  process.stderr.write(
    `created admin identity "${name}" with a generated password, written to ${file} ` +
      '(readable by this user only): log in, change it, then delete the file ' +
      '(set CTRL_ADMIN_PASSWORD to choose one)\n',
  )
}
