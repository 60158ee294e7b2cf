import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, type FieldCause, messageOf } from '../errors.js'
import { ERROR_META } from './common-schemas.js'

interface AjvIssue {
  instancePath?: string
  keyword?: string
  message?: string
  params?: { missingProperty?: string; additionalProperty?: string }
}

/** Turns the first schema violation into a field cause (`tags.owner`, `scopes[0]` style names). */
function validationCause(err: FastifyError): FieldCause {
  const issue = (err.validation?.[0] ?? {}) as AjvIssue
  const path = (issue.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '')
  const child = issue.params?.missingProperty ?? issue.params?.additionalProperty
  const field = [path, child].filter(Boolean).join('.') || (err.validationContext ?? 'body')
  let reason = issue.message ?? 'is invalid'
  if (issue.keyword === 'required') reason = 'is required'
  if (issue.keyword === 'additionalProperties') reason = 'is not a known field'
  return { field, reason }
}

function toAppError(err: FastifyError): AppError | undefined {
  if (err instanceof AppError) return err
  if (err.validation) {
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

export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  err: AppError,
): FastifyReply {
  for (const [name, value] of Object.entries(err.headers)) reply.header(name, value)
  return reply.code(err.statusCode).send({
    error: {
      code: err.code,
      message: err.message || messageOf(err.code),
      requestId: request.id,
      ...(err.fieldCause ? { cause: err.fieldCause } : {}),
    },
    meta: ERROR_META,
  })
}

/** One error handler and one not-found handler, both in the edge API's error envelope. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = toAppError(err)
    if (appError) {
      if (appError.statusCode >= 500) request.log.error({ err }, 'request failed')
      return sendError(reply, request, appError)
    }
    request.log.error({ err }, 'unhandled error')
    return sendError(reply, request, new AppError('UNHANDLED'))
  })
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      request,
      new AppError('NOT_FOUND', {
        cause: {
          field: 'path',
          reason: `no route for ${request.method} ${request.url.split('?')[0]}`,
        },
      }),
    ),
  )
}
