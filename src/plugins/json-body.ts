import fp from 'fastify-plugin'
import { controlCharAt, hasLoneSurrogate } from '../control-chars.js'
import { fieldError } from '../errors.js'

// Fields that hold PEM text (certPem, enrollment's clientCsr), whose lines are separated by line
// feeds (and carriage returns).
const MULTILINE = /(pem|csr)$/i
const MAX_DEPTH = 64 // deeper bodies are refused by the schemas; this only bounds the walk

/** What a string in a request body may not hold, checked by `badStringField`. */
interface StringRule {
  /** Whether `text`, found at `path` (a member name when `key`), breaks the rule. */
  breaks: (text: string, path: string, key: boolean) => boolean
  reason: string
}

/** A C0 control character other than tab; line breaks are allowed in PEM fields. */
const CONTROL_CHARS: StringRule = {
  breaks: (text, path, key) => controlCharAt(text, !key && MULTILINE.test(path) ? '\n\r' : '') >= 0,
  reason: 'control characters are not allowed',
}

const LONE_SURROGATES: StringRule = {
  breaks: (text) => hasLoneSurrogate(text),
  reason: 'a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape) is not allowed',
}

/** Only a `\uD800`-`\uDFFF` escape in the JSON text can make a lone surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

/**
 * The path of the first string (or member name) in a parsed body that breaks `rule`, or
 * undefined.
 */
function badStringField(
  rule: StringRule,
  value: unknown,
  path = '',
  depth = 0,
): string | undefined {
  if (depth > MAX_DEPTH) return undefined
  if (typeof value === 'string') return rule.breaks(value, path, false) ? path || 'body' : undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = badStringField(rule, value[i], `${path}[${i}]`, depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, member] of Object.entries(value)) {
      const child = path === '' ? key : `${path}.${key}`
      if (rule.breaks(key, child, true)) return child
      const found = badStringField(rule, member, child, depth + 1)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/**
 * JSON bodies, where an empty body reads as "no body": login accepts a bare POST with a bearer
 * token. A string with a control character (a NUL, an escape sequence) or a lone surrogate is
 * refused with 400 naming the field: no stored name or user name needs one, PostgreSQL cannot
 * store a NUL, and neither store keeps a lone surrogate as sent (see hasLoneSurrogate).
 */
export const jsonBody = fp(
  async (app) => {
    const jsonParser = app.getDefaultJsonParser('error', 'error')
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(null, undefined)
      // parseAs: 'string'
      return jsonParser(request, body as string, (err, parsed) => {
        if (err) return done(err)
        for (const rule of SURROGATE_ESCAPE.test(body as string)
          ? [CONTROL_CHARS, LONE_SURROGATES]
          : [CONTROL_CHARS]) {
          const field = badStringField(rule, parsed)
          if (field !== undefined) return done(fieldError('COULD_NOT_VALIDATE', field, rule.reason))
        }
        return done(null, parsed)
      })
    })
  },
  { name: 'json-body' },
)
