import fp from 'fastify-plugin'
import { controlCharAt } from '../control-chars.js'
import { fieldError } from '../errors.js'

// Fields that hold PEM text (certPem, enrollment's clientCsr), whose lines are separated by line
// feeds (and carriage returns).
const MULTILINE = /(pem|csr)$/i
const MAX_DEPTH = 64 // deeper bodies are refused by the schemas; this only bounds the walk

/**
 * The path of the first string (or member name) in a parsed body holding a C0 control character
 * other than tab (line breaks are allowed in PEM fields), or undefined.
 */
export function controlCharField(value: unknown, path = '', depth = 0): string | undefined {
  if (depth > MAX_DEPTH) return undefined
  if (typeof value === 'string') {
    return controlCharAt(value, MULTILINE.test(path) ? '\n\r' : '') >= 0
      ? path || 'body'
      : undefined
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = controlCharField(value[i], `${path}[${i}]`, depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, member] of Object.entries(value)) {
      const child = path === '' ? key : `${path}.${key}`
      if (controlCharAt(key) >= 0) return child
      const found = controlCharField(member, child, depth + 1)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/**
 * JSON bodies, where an empty body reads as "no body": login accepts a bare POST with a bearer
 * token. A string with a control character (a NUL, an escape sequence) is refused with 400
 * naming the field: no stored name or user name needs one, and PostgreSQL cannot store a NUL.
 */
export const jsonBody = fp(
  async (app) => {
    const jsonParser = app.getDefaultJsonParser('error', 'error')
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(null, undefined)
      // parseAs: 'string'
      return jsonParser(request, body as string, (err, parsed) => {
        if (err) return done(err)
        const field = controlCharField(parsed)
        if (field === undefined) return done(null, parsed)
        return done(fieldError('COULD_NOT_VALIDATE', field, 'control characters are not allowed'))
      })
    })
  },
  { name: 'json-body' },
)
