import type { FastifyServerOptions } from 'fastify'
import type { LogLevel } from './config.js'

/**
 * Paths that must never reach a log line. Fastify's request serializer already leaves headers
 * out; these cover anything that logs a header map or a body by mistake.
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
  '*.password',
  '*.token',
  '*.jwt',
  '*.privateKey',
  // Node's HTTP parse errors carry the raw request bytes, headers and body included.
  '*.rawPacket',
]

/** Pino options for the controller: JSON to stdout, redacted, at the configured level. */
export function loggerOptions(
  level: LogLevel,
): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }
}
