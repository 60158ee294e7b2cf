import { controlCharAt } from '../../control-chars.js'
import { AppError } from '../../errors.js'

/** A lexical token of the filter language, with its offset in the filter text. */
export type Token =
  | { kind: 'ident'; text: string; pos: number }
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'number'; text: string; value: number; pos: number }
  | { kind: 'datetime'; value: string; pos: number }
  | { kind: 'op'; text: string; pos: number }
  | { kind: 'end'; pos: number }

/** 400 INVALID_FILTER; the reason always ends with the position (0-based) of the fault. */
export function invalidFilter(reason: string, pos: number, value?: string): AppError {
  return new AppError('INVALID_FILTER', {
    cause: {
      field: 'filter',
      reason: `${reason} at position ${pos}`,
      ...(value === undefined ? {} : { value }),
    },
  })
}

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', n: '\n', r: '\r', t: '\t', f: '\f' }
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i

function readString(text: string, start: number): [string, number] {
  let value = ''
  for (let j = start + 1; j < text.length; j++) {
    const c = text.charAt(j)
    if (c === '"') return [value, j + 1]
    if (c === '\\') {
      const next = text.charAt(j + 1)
      const escaped = Object.hasOwn(ESCAPES, next) ? ESCAPES[next] : undefined
      if (escaped === undefined) {
        throw invalidFilter('unknown escape (use \\" \\\\ \\n \\r \\t \\f)', j)
      }
      value += escaped
      j++
    } else if (controlCharAt(c) === 0) {
      throw invalidFilter('control characters are not allowed in a string; use an escape', j)
    } else {
      value += c
    }
  }
  throw invalidFilter('unterminated string', start)
}

function readDatetime(text: string, start: number, wordEnd: number): [string, number] {
  const close = text.indexOf(')', wordEnd)
  if (close < 0) throw invalidFilter('unterminated datetime(', start)
  const raw = text.slice(wordEnd + 1, close).trim()
  const ms = RFC3339.test(raw) ? Date.parse(raw) : Number.NaN
  if (Number.isNaN(ms)) throw invalidFilter('expected an RFC 3339 date-time', wordEnd + 1, raw)
  return [datetimeValue(ms, wordEnd + 1, raw), close + 1]
}

// Years 1 to 9999: what both stores compare and PostgreSQL's timestamptz reads as ISO text (an
// offset can push 0001-01-01 into year 0, and JavaScript writes years past 9999 as +275760-…).
const FIRST_MS = Date.parse('0001-01-01T00:00:00.000Z')
const LAST_MS = Date.parse('9999-12-31T23:59:59.999Z')

/** A parsed date-time as the normalised ISO text filters compare, when within years 1 to 9999. */
export function datetimeValue(ms: number, pos: number, raw: string): string {
  if (ms < FIRST_MS || ms > LAST_MS) {
    throw invalidFilter('date-times must fall within the years 0001 to 9999 (UTC)', pos, raw)
  }
  return new Date(ms).toISOString()
}

/**
 * Refuses control characters other than the whitespace between tokens (tab, line feed, carriage
 * return): none belongs in a filter.
 */
export function checkControls(text: string): void {
  const at = controlCharAt(text, '\t\n\r')
  if (at >= 0) throw invalidFilter('control characters are not allowed in a filter', at)
}

/** Splits a filter into tokens; the list always ends with an `end` token. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const c = text.charAt(i)
    const rest = text.slice(i)
    if (/\s/.test(c)) {
      i++
    } else if (c === '"') {
      const [value, next] = readString(text, i)
      tokens.push({ kind: 'string', value, pos: i })
      i = next
    } else if ('()[],'.includes(c)) {
      tokens.push({ kind: 'op', text: c, pos: i })
      i++
    } else if ('=!<>'.includes(c)) {
      const two = text.slice(i, i + 2)
      const op = ['!=', '<=', '>='].includes(two) ? two : c
      if (op === '!') throw invalidFilter('unexpected "!"', i)
      tokens.push({ kind: 'op', text: op, pos: i })
      i += op.length
    } else if (/^-?\d/.test(rest)) {
      const m = /^-?\d+(\.\d+)?/.exec(rest)
      const num = m?.[0] ?? c
      tokens.push({ kind: 'number', text: num, value: Number(num), pos: i })
      i += num.length
    } else if (/[A-Za-z_]/.test(c)) {
      const word = /^[A-Za-z_][\w.]*/.exec(rest)?.[0] ?? c
      if (word.toLowerCase() === 'datetime' && text.charAt(i + word.length) === '(') {
        const [value, next] = readDatetime(text, i, i + word.length)
        tokens.push({ kind: 'datetime', value, pos: i })
        i = next
      } else {
        tokens.push({ kind: 'ident', text: word, pos: i })
        i += word.length
      }
    } else {
      throw invalidFilter(`unexpected "${c}"`, i)
    }
  }
  tokens.push({ kind: 'end', pos: text.length })
  return tokens
}
