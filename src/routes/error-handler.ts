import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
} from 'fastify'
import { AppError, type ErrorCode, type FieldCause, messageOf } from '../errors.js'
import { loggedUrl } from '../request-logger.js'
import { ERROR_META } from './common-schemas.js'

/** Turns the first schema violation into a field cause (`tags.owner`, `scopes[0]` style names). */
function validationCause(err: FastifyError): FieldCause {
  const issue = err.validation?.[0]
  const path = (issue?.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '')
  const child = [issue?.params?.missingProperty, issue?.params?.additionalProperty].find(
    (p): p is string => typeof p === 'string',
  )
  const field = [path, child].filter(Boolean).join('.') || (err.validationContext ?? 'body')
  let reason = issue?.message ?? 'is invalid'
  if (issue?.keyword === 'required') reason = 'is required'
  if (issue?.keyword === 'additionalProperties') reason = 'is not a known field'
  return { field, reason }
}

function toAppError(err: FastifyError): AppError | undefined {
  if (err instanceof AppError) return err
  if (err.validation) {
    // Unknown fields and values of the wrong JSON type alike (`"name": 42`), as issue 2 specifies;
    // upstream answers a wrong type COULD_NOT_PARSE_BODY, kept here for a body that is not JSON.
    return new AppError('COULD_NOT_VALIDATE', { cause: validationCause(err) })
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('REQUEST_ENTITY_TOO_LARGE')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('UNSUPPORTED_MEDIA_TYPE')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('COULD_NOT_PARSE_BODY')
  }
  if (
    err.statusCode === 400 &&
    (err instanceof SyntaxError || err.code?.startsWith('FST_ERR_CTP'))
  ) {
    return new AppError('COULD_NOT_PARSE_BODY')
  }
  return undefined
}

/** The edge API's error envelope for an error answered under a request id. */
function envelope(err: AppError, requestId: string) {
  return {
    error: {
      code: err.code,
      message: err.message || messageOf(err.code),
      requestId,
      ...(err.fieldCause ? { cause: err.fieldCause } : {}),
    },
    meta: ERROR_META,
  }
}

export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  err: AppError,
): FastifyReply {
  for (const [name, value] of Object.entries(err.headers)) reply.header(name, value)
  return reply.code(err.statusCode).send(envelope(err, request.id))
}

const FRAMEWORK_ERRORS: Record<string, [ErrorCode, string]> = {
  FST_ERR_BAD_URL: ['INVALID_PATH', 'is not a valid percent-encoded URL path'],
  FST_ERR_MAX_PARAM_LENGTH: ['REQUEST_URI_TOO_LONG', 'has a segment longer than 100 characters'],
}

/** Fastify's routing errors (an undecodable path, an overlong path parameter) in the envelope. */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = FRAMEWORK_ERRORS[err.code]
  const appError = known
    ? new AppError(known[0], { cause: { field: 'path', reason: known[1] } })
    : new AppError('UNHANDLED')
  if (!known) request.log.error({ err }, 'unhandled error')
  sendError(reply, request, appError)
  // These requests never reach a route, so the access-log hook does not see them.
  request.log.info(
    { method: request.method, url: loggedUrl(request.url), statusCode: appError.statusCode },
    'request completed',
  )
}

function clientErrorCode(code: string | undefined): ErrorCode {
  if (code === 'HPE_HEADER_OVERFLOW') return 'REQUEST_HEADER_TOO_LARGE'
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT'
  return 'COULD_NOT_PARSE_REQUEST'
}

/**
 * Answers what Node's HTTP parser refused (malformed HTTP, a head over 16 KiB, a timed-out
 * request) with a complete HTTP/1.1 response carrying the envelope, then closes the socket.
 */
export function clientErrorHandler(nextId: () => string, log: FastifyBaseLogger) {
  const answered = new WeakSet<Socket>()
  return (err: Error & { code?: string }, socket: Socket): void => {
    // Node reports every later chunk of a refused connection again; it is answered once.
    if (err.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return
    answered.add(socket)
    const appError = new AppError(clientErrorCode(err.code))
    const requestId = nextId()
    // Never `{ err }`: Node attaches the raw bytes received (`rawPacket`), tokens and passwords included.
    log.debug({ reqId: requestId, code: err.code }, 'client error')
    // A response already on its way must not be cut into (Node's own handler checks the same).
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage // Node's field
    if (socket.writable && !inFlight?.headersSent) {
      const body = JSON.stringify(envelope(appError, requestId))
      const status = appError.statusCode
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      )
    }
    // Closing at once could reset the connection before the client reads the answer.
    socket.once('end', () => socket.destroy())
    setTimeout(() => socket.destroy(), 1000).unref()
  }
}

/** HTTP/1.1 requires `Host`; Node's own check answers an empty body, so the app checks it. */
export function requireHost(request: FastifyRequest): void {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    throw new AppError('COULD_NOT_PARSE_REQUEST', {
      cause: { field: 'host', reason: 'is required' },
    })
  }
}

/** One error handler and one not-found handler, both in the edge API's error envelope. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = toAppError(err)
    if (appError) {
      if (appError.statusCode >= 500) request.log.error({ err }, 'request failed')
      return sendError(reply, request, appError)
    }
    // A client that went away mid-body is not a server fault, and operators page on error.
    if (request.raw.aborted || err.code === 'ECONNRESET') {
      request.log.debug({ code: err.code }, 'client aborted the request')
    } else request.log.error({ err }, 'unhandled error')
    return sendError(reply, request, new AppError('UNHANDLED'))
  })
  const routes = new RouteShapes()
  app.addHook('onRoute', (route) => routes.add(route.method, route.url))
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const allowed = routes.methodsFor(path)
    // A path that exists with other verbs: 405 naming them, as upstream (go-openapi) answers. A
    // verb the pattern takes found nothing there after all (a file the console does not have), and
    // a preflight (OPTIONS) without CORS stays 404, as before.
    if (allowed.length > 0 && !allowed.includes(request.method) && request.method !== 'OPTIONS') {
      return sendError(
        reply,
        request,
        new AppError('METHOD_NOT_ALLOWED', {
          headers: { allow: allowed.join(', ') },
          cause: {
            field: 'method',
            reason: `${request.method} is not one of ${allowed.join(', ')}`,
          },
        }),
      )
    }
    return sendError(
      reply,
      request,
      new AppError('NOT_FOUND', {
        cause: { field: 'path', reason: `no route for ${request.method} ${path}` },
      }),
    )
  })
}

/**
 * The paths the routes serve, as patterns, with their verbs: which verbs a path that found no
 * route has (for a 405). Matched as the router does: repeated and trailing slashes ignored.
 */
class RouteShapes {
  private readonly shapes: { pattern: RegExp; methods: Set<string> }[] = []

  add(method: string | string[], url: string): void {
    // A catch-all (CORS preflights) would make every unknown path a 405.
    if (url === '*' || url === '/*') return
    const source = normalise(url)
      .split('/')
      .map((segment) =>
        segment.startsWith(':')
          ? '[^/]+'
          : segment === '*'
            ? '.*'
            : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/')
    const pattern = new RegExp(`^${source}$`)
    let shape = this.shapes.find((s) => s.pattern.source === pattern.source)
    if (!shape) {
      shape = { pattern, methods: new Set() }
      this.shapes.push(shape)
    }
    for (const m of Array.isArray(method) ? method : [method]) shape.methods.add(m)
  }

  methodsFor(path: string): string[] {
    const p = normalise(path)
    const methods = new Set<string>()
    for (const shape of this.shapes) {
      if (shape.pattern.test(p)) for (const m of shape.methods) methods.add(m)
    }
    return [...methods].sort()
  }
}

function normalise(path: string): string {
  const collapsed = path.replace(/\/{2,}/g, '/')
  return collapsed.length > 1 ? collapsed.replace(/\/$/, '') : collapsed
}
