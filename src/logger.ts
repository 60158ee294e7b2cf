import type { FastifyServerOptions } from 'fastify'
import type { LogLevel } from './config.js'

const CENSOR = '[redacted]'

/**
 * Paths that must never reach a log line. Fastify's request serializer already leaves headers
 * out; these cover anything that logs a header map or a body by mistake. Each names one key, so
 * pino's redaction costs only the lines that carry that key.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["zt-session"]',
  'req.headers.cookie',
  'res.headers["zt-session"]',
  'headers.authorization',
  'headers["zt-session"]',
  'password',
  'token',
]

/**
 * Keys redacted one level down, under whatever key holds them (`body.password`, `err.rawPacket`:
 * Node's HTTP parse errors carry the raw request bytes, headers and body included). Pino would
 * take a wildcard path (`*.password`) through its redactor for every value of every line, which
 * doubled the cost of a line; `redactNested` looks only into values that are objects.
 */
export const NESTED_SECRET_KEYS = ['password', 'token', 'jwt', 'privateKey', 'rawPacket'] as const

/** A copy of `value` (same prototype, same own properties) with each of `keys` censored. */
function censored(value: object, keys: string[]): object {
  const descriptors = Object.getOwnPropertyDescriptors(value)
  for (const key of keys) {
    descriptors[key] = { value: CENSOR, enumerable: true, writable: true, configurable: true }
  }
  return Object.create(Object.getPrototypeOf(value), descriptors) as object
}

/**
 * Pino's `formatters.log`: the logged object, or a copy of it where every top-level value that is
 * an object holding one of NESTED_SECRET_KEYS is replaced by a censored copy (an Error stays an
 * Error: prototype, message and stack are kept). The caller's objects are never changed.
 */
export function redactNested(obj: Record<string, unknown>): Record<string, unknown> {
  let out = obj
  for (const key in obj) {
    const value = obj[key]
    // JSON leaves an array's named properties out: only its elements could carry a secret.
    if (value === null || typeof value !== 'object' || Array.isArray(value)) continue
    const found = NESTED_SECRET_KEYS.filter((secret) => Object.hasOwn(value, secret))
    if (found.length === 0) continue
    if (out === obj) out = { ...obj }
    out[key] = censored(value, found)
  }
  return out
}

type PinoOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>

/** The redaction every logger of the controller gets: pino's paths, then the nested keys. */
export function redaction(): Pick<PinoOptions, 'redact' | 'formatters'> {
  return { redact: { paths: REDACT_PATHS, censor: CENSOR }, formatters: { log: redactNested } }
}

/** Pino options for the controller: JSON to stdout, redacted, at the configured level. */
export function loggerOptions(level: LogLevel): PinoOptions {
  return { level, ...redaction() }
}

/** Where `turnBuffered` sends its text: pino's synchronous destination (`pino.destination`). */
export interface LineSink {
  write(text: string): unknown
  flushSync(): void
}

/** Lines kept at most before they are written without waiting for the end of the turn. */
const MAX_PENDING_LINES = 512

/**
 * A pino stream that writes the lines of one event-loop turn together, in one write to `sink`, as
 * soon as the turn's I/O callbacks have run (`setImmediate`): a group commit that answers ten
 * logins logs twenty lines, and wrote them one system call each (5% of a login's CPU). A line
 * waits less than a millisecond; `flushSync` (shutdown, a fatal error) writes what is pending.
 */
export function turnBuffered(sink: LineSink): LineSink {
  let pending: string[] = []
  const flush = () => {
    if (pending.length === 0) return
    const text = pending.join('')
    pending = []
    sink.write(text)
  }
  return {
    write(line: string) {
      const n = pending.push(line)
      if (n === 1) setImmediate(flush)
      else if (n >= MAX_PENDING_LINES) flush()
      return true
    },
    flushSync() {
      flush()
      sink.flushSync()
    },
  }
}
