import fp from 'fastify-plugin'
import { controlCharAt, hasLoneSurrogate } from '../control-chars.js'
import { fieldError } from '../errors.js'

// Fields that hold PEM text (certPem, enrollment's clientCsr), whose lines are separated by line
// feeds (and carriage returns).
const MULTILINE = /(pem|csr)$/i
const MAX_DEPTH = 64 // no body is nested this deep: deeper ones are refused before they are parsed

/** What a string in a request body may not hold, checked by `badStringField`. */
interface StringRule {
  /** Whether `text` breaks the rule; `multiline` for the value of a PEM field. */
  breaks: (text: string, multiline: boolean) => boolean
  reason: string
}

/** A C0 control character other than tab; line breaks are allowed in PEM fields. */
const CONTROL_CHARS: StringRule = {
  breaks: (text, multiline) => controlCharAt(text, multiline ? '\n\r' : '') >= 0,
  reason: 'control characters are not allowed',
}

const LONE_SURROGATES: StringRule = {
  breaks: (text) => hasLoneSurrogate(text),
  reason: 'a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape) is not allowed',
}

/**
 * Whether JSON text nests arrays and objects deeper than `max` (brackets inside strings aside):
 * one pass that stops at the first level past it. V8's parser spends far more on a deeply nested
 * text than on a flat one of the same size (a megabyte of `[` then `]`, which no route takes, costs
 * several times a flat megabyte), and the body is parsed before any route or schema looks at it,
 * also for a request without a session or to a path that does not exist.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** Only a `\uD800`-`\uDFFF` escape in the JSON text can make a lone surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

type Segment = string | number

/**
 * The path of the first string (or member name) in a parsed body that breaks `rule`, or
 * undefined. The walk keeps no path: each string and member name is looked at once, whatever its
 * depth (a path built for every element, a long member name its prefix, would copy that name once
 * an element); the path is written only for the string that breaks the rule.
 */
function badStringField(rule: StringRule, body: unknown): string | undefined {
  const found = firstBreaking(rule, body, false, 0)
  if (found === undefined) return undefined
  let path = ''
  for (const segment of found) {
    if (typeof segment === 'number') path += `[${segment}]`
    else path = path === '' ? segment : `${path}.${segment}`
  }
  return path || 'body'
}

/** The segments of the path to the first breaking string, innermost last. */
function firstBreaking(
  rule: StringRule,
  value: unknown,
  multiline: boolean,
  depth: number,
): Segment[] | undefined {
  if (depth > MAX_DEPTH) return undefined
  if (typeof value === 'string') return rule.breaks(value, multiline) ? [] : undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstBreaking(rule, value[i], false, depth + 1)
      if (found !== undefined) {
        found.unshift(i)
        return found
      }
    }
    return undefined
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, member] of Object.entries(value)) {
      if (rule.breaks(key, false)) return [key]
      const found = firstBreaking(rule, member, MULTILINE.test(key), depth + 1)
      if (found !== undefined) {
        found.unshift(key)
        return found
      }
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
      if (nestedDeeperThan(body as string, MAX_DEPTH)) {
        return done(
          fieldError('COULD_NOT_VALIDATE', 'body', `nested deeper than ${MAX_DEPTH} levels`),
        )
      }
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
