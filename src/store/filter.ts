import { AppError } from '../errors.js'

/** How a public field maps onto a column, and what kind of values it compares with. */
export interface FieldSpec {
  column: string
  type: 'string' | 'boolean' | 'datetime'
  /**
   * Narrows `contains`/`icontains` through an index: a condition true (at least) for every row whose
   * column contains the value, case-insensitively; undefined when the index cannot help.
   */
  search?: (value: string) => SqlFragment | undefined
}
export type FieldMap = Record<string, FieldSpec>

export interface SqlFragment {
  sql: string
  params: unknown[]
}

type Token =
  | { kind: 'ident'; text: string; pos: number }
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'number'; value: number; pos: number }
  | { kind: 'datetime'; value: string; pos: number }
  | { kind: 'op'; text: string; pos: number }
  | { kind: 'end'; pos: number }

const MAX_FILTER_LENGTH = 4096
const MAX_DEPTH = 32

function invalid(reason: string, value?: string): AppError {
  return new AppError('INVALID_FILTER', {
    cause: { field: 'filter', reason, ...(value === undefined ? {} : { value }) },
  })
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const c = text[i] as string
    if (/\s/.test(c)) {
      i++
    } else if (c === '"') {
      let value = ''
      let j = i + 1
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && j + 1 < text.length) j++
        value += text[j]
      }
      if (j >= text.length) throw invalid(`unterminated string at position ${i}`)
      tokens.push({ kind: 'string', value, pos: i })
      i = j + 1
    } else if ('()[],'.includes(c)) {
      tokens.push({ kind: 'op', text: c, pos: i })
      i++
    } else if ('=!<>'.includes(c)) {
      const two = text.slice(i, i + 2)
      const op = ['!=', '<=', '>='].includes(two) ? two : c
      if (op === '!') throw invalid(`unexpected "!" at position ${i}`)
      tokens.push({ kind: 'op', text: op, pos: i })
      i += op.length
    } else if (/[-\d]/.test(c)) {
      const m = /^-?\d+(\.\d+)?/.exec(text.slice(i))
      if (!m) throw invalid(`unexpected "${c}" at position ${i}`)
      tokens.push({ kind: 'number', value: Number(m[0]), pos: i })
      i += m[0].length
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][\w.]*/.exec(text.slice(i)) as RegExpExecArray // c matched the first char
      const word = m[0]
      if (word.toLowerCase() === 'datetime' && text[i + word.length] === '(') {
        const close = text.indexOf(')', i)
        if (close < 0) throw invalid(`unterminated datetime at position ${i}`)
        const raw = text.slice(i + word.length + 1, close).trim()
        const date = new Date(raw)
        if (Number.isNaN(date.getTime())) throw invalid('invalid datetime literal', raw)
        tokens.push({ kind: 'datetime', value: date.toISOString(), pos: i })
        i = close + 1
      } else {
        tokens.push({ kind: 'ident', text: word, pos: i })
        i += word.length
      }
    } else {
      throw invalid(`unexpected "${c}" at position ${i}`)
    }
  }
  tokens.push({ kind: 'end', pos: text.length })
  return tokens
}

const KEYWORDS = new Set([
  'and',
  'or',
  'not',
  'contains',
  'icontains',
  'in',
  'true',
  'false',
  'null',
])

class Parser {
  private i = 0
  constructor(
    private readonly tokens: Token[],
    private readonly fields: FieldMap,
  ) {}

  parse(): SqlFragment {
    const expr = this.or(0)
    const t = this.peek()
    if (t.kind !== 'end') throw invalid(`unexpected input at position ${t.pos}`)
    return expr
  }

  private peek(): Token {
    return this.tokens[this.i] as Token // the token list always ends with an 'end' token
  }
  private next(): Token {
    const t = this.peek()
    if (t.kind !== 'end') this.i++
    return t
  }
  private isWord(word: string, t = this.peek()): boolean {
    return t.kind === 'ident' && t.text.toLowerCase() === word
  }
  private isOp(op: string, t = this.peek()): boolean {
    return t.kind === 'op' && t.text === op
  }

  private or(depth: number): SqlFragment {
    const parts = [this.and(depth)]
    while (this.isWord('or')) {
      this.next()
      parts.push(this.and(depth))
    }
    return join(parts, ' OR ')
  }

  private and(depth: number): SqlFragment {
    const parts = [this.unary(depth)]
    while (this.isWord('and')) {
      this.next()
      parts.push(this.unary(depth))
    }
    return join(parts, ' AND ')
  }

  private unary(depth: number): SqlFragment {
    if (depth > MAX_DEPTH) throw invalid(`nesting deeper than ${MAX_DEPTH}`)
    if (this.isWord('not')) {
      this.next()
      const inner = this.unary(depth + 1)
      return { sql: `NOT (${inner.sql})`, params: inner.params }
    }
    if (this.isOp('(')) {
      this.next()
      const inner = this.or(depth + 1)
      if (!this.isOp(')')) throw invalid(`expected ")" at position ${this.peek().pos}`)
      this.next()
      return { sql: `(${inner.sql})`, params: inner.params }
    }
    return this.comparison()
  }

  private comparison(): SqlFragment {
    const t = this.next()
    if (t.kind !== 'ident' || KEYWORDS.has(t.text.toLowerCase())) {
      throw invalid(`expected a field name at position ${t.pos}`)
    }
    const spec = Object.hasOwn(this.fields, t.text) ? this.fields[t.text] : undefined
    if (!spec) {
      throw invalid(
        `unknown field; filterable fields: ${Object.keys(this.fields).join(', ')}`,
        t.text,
      )
    }
    const col = spec.column
    const op = this.peek()
    let negate = false
    if (this.isWord('not', op)) {
      this.next()
      negate = true
    }
    const word = this.peek()
    if (this.isWord('contains', word) || this.isWord('icontains', word)) {
      this.next()
      if (spec.type !== 'string') throw invalid(`contains needs a string field`, t.text)
      const value = this.stringValue()
      const insensitive = word.kind === 'ident' && word.text.toLowerCase() === 'icontains'
      let match: SqlFragment = insensitive
        ? { sql: `instr(lower(${col}), lower(?)) > 0`, params: [value] }
        : { sql: `instr(${col}, ?) > 0`, params: [value] }
      const narrowed = spec.search?.(value)
      if (narrowed) {
        // The index finds candidates case-insensitively; instr keeps contains case-sensitive.
        match = {
          sql: `(${narrowed.sql}) AND ${match.sql}`,
          params: [...narrowed.params, ...match.params],
        }
      }
      return negate
        ? { sql: `NOT (${col} IS NOT NULL AND ${match.sql})`, params: match.params }
        : match
    }
    if (this.isWord('in', word)) {
      this.next()
      const values = this.list(spec)
      const sql = `${col} IN (${values.map(() => '?').join(', ')})`
      return { sql: negate ? `NOT (${sql})` : sql, params: values }
    }
    if (negate) throw invalid(`expected contains or in after "not" at position ${word.pos}`)
    if (word.kind === 'op' && ['=', '!=', '<', '<=', '>', '>='].includes(word.text)) {
      this.next()
      if (this.isWord('null')) {
        this.next()
        if (word.text === '=') return { sql: `${col} IS NULL`, params: [] }
        if (word.text === '!=') return { sql: `${col} IS NOT NULL`, params: [] }
        throw invalid(`null compares only with = or !=`)
      }
      const value = this.value(spec)
      if (spec.type === 'boolean' && !['=', '!='].includes(word.text)) {
        throw invalid(`a boolean field compares only with = or !=`, t.text)
      }
      const sqlOp = word.text === '!=' ? 'IS NOT' : word.text
      return { sql: `${col} ${sqlOp} ?`, params: [value] }
    }
    if (spec.type === 'boolean') return { sql: `${col} = 1`, params: [] }
    throw invalid(`expected an operator after "${t.text}" at position ${word.pos}`)
  }

  private stringValue(): string {
    const t = this.next()
    if (t.kind !== 'string') throw invalid(`expected a quoted string at position ${t.pos}`)
    return t.value
  }

  private value(spec: FieldSpec): unknown {
    const t = this.next()
    if (spec.type === 'boolean') {
      if (this.isWord('true', t)) return 1
      if (this.isWord('false', t)) return 0
      throw invalid(`expected true or false at position ${t.pos}`)
    }
    if (spec.type === 'datetime') {
      if (t.kind === 'datetime') return t.value
      if (t.kind === 'string' && !Number.isNaN(new Date(t.value).getTime())) {
        return new Date(t.value).toISOString()
      }
      throw invalid(`expected datetime(...) at position ${t.pos}`)
    }
    if (t.kind !== 'string') throw invalid(`expected a quoted string at position ${t.pos}`)
    return t.value
  }

  private list(spec: FieldSpec): unknown[] {
    if (!this.isOp('[')) throw invalid(`expected "[" at position ${this.peek().pos}`)
    this.next()
    const values = [this.value(spec)]
    while (this.isOp(',')) {
      this.next()
      values.push(this.value(spec))
    }
    if (!this.isOp(']')) throw invalid(`expected "]" at position ${this.peek().pos}`)
    this.next()
    return values
  }
}

function join(parts: SqlFragment[], sep: string): SqlFragment {
  if (parts.length === 1) return parts[0] as SqlFragment
  return { sql: parts.map((p) => p.sql).join(sep), params: parts.flatMap((p) => p.params) }
}

/**
 * Compiles a filter in the edge API's filter language (a subset of ZitiQL: comparisons, contains,
 * icontains, in, null checks, bare booleans, and/or/not, parentheses) into a parameterised SQL
 * condition over the given fields. Throws AppError INVALID_FILTER on anything else.
 */
export function compileFilter(text: string | undefined, fields: FieldMap): SqlFragment {
  if (text === undefined || text.trim() === '') return { sql: '1 = 1', params: [] }
  if (text.length > MAX_FILTER_LENGTH) throw invalid(`longer than ${MAX_FILTER_LENGTH} characters`)
  return new Parser(tokenize(text), fields).parse()
}
