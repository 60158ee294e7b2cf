import type {
  CompareOp,
  Condition,
  FieldMap,
  FilterQuery,
  Literal,
  Operand,
  SortKey,
} from './filter-ast.js'
import {
  checkControls,
  datetimeValue,
  invalidFilter,
  type Token,
  tokenize,
} from './filter-lexer.js'

export type * from './filter-ast.js'
export { invalidFilter } from './filter-lexer.js'

const MAX_FILTER_LENGTH = 4096
const MAX_DEPTH = 32
/** Comparisons a filter may make unless its list says fewer (`in` and `between` count once). */
export const MAX_COMPARISONS = 256
const COMPARE_OPS: readonly CompareOp[] = ['=', '!=', '<', '<=', '>', '>=']

function combine(type: 'and' | 'or', parts: Condition[]): Condition {
  const [first] = parts
  return parts.length === 1 && first ? first : { type, parts }
}

/** Recursive descent over the tokens: or > and > not/parentheses > comparison. */
class Parser {
  private i = 0
  private comparisons = 0
  constructor(
    private readonly tokens: Token[],
    private readonly fields: FieldMap,
    private readonly sortable: Record<string, string>,
    private readonly maxComparisons: number,
  ) {}

  query(): FilterQuery {
    const clauseFirst = this.isClauseStart()
    const where: Condition = clauseFirst ? { type: 'const', value: true } : this.or(0)
    const sort = this.isWord('sort') ? this.sortBy() : []
    let skip: number | undefined
    if (this.isWord('skip')) {
      this.next()
      skip = this.count('skip')
    }
    let limit: number | 'none' | undefined
    if (this.isWord('limit')) {
      this.next()
      if (this.isWord('none')) {
        this.next()
        limit = 'none'
      } else {
        limit = this.count('limit')
      }
    }
    const t = this.peek()
    if (t.kind !== 'end') throw invalidFilter('unexpected input', t.pos)
    return { where, sort, skip, limit }
  }

  private peek(): Token {
    return this.tokens[this.i] ?? { kind: 'end', pos: 0 }
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
  private expectOp(op: string): void {
    if (!this.isOp(op)) throw invalidFilter(`expected "${op}"`, this.peek().pos)
    this.next()
  }

  private isClauseStart(): boolean {
    const after = this.tokens[this.i + 1] ?? this.peek()
    if (this.isWord('sort')) return this.isWord('by', after)
    if (this.isWord('skip')) return after.kind === 'number'
    if (this.isWord('limit')) return after.kind === 'number' || this.isWord('none', after)
    return this.peek().kind === 'end'
  }

  private sortBy(): SortKey[] {
    this.next()
    if (!this.isWord('by')) throw invalidFilter('expected "by"', this.peek().pos)
    this.next()
    const keys: SortKey[] = []
    do {
      if (keys.length > 0) this.next()
      const t = this.next()
      const name = t.kind === 'ident' ? t.text : ''
      if (!Object.hasOwn(this.sortable, name)) {
        const fields = Object.keys(this.sortable).join(', ')
        throw invalidFilter(`expected a sort field (${fields})`, t.pos, name || undefined)
      }
      const desc = this.isWord('desc')
      if (desc || this.isWord('asc')) this.next()
      keys.push({ column: this.sortable[name] ?? name, desc })
    } while (this.isOp(','))
    return keys
  }

  private count(clause: string): number {
    const t = this.next()
    if (t.kind !== 'number' || !/^\d+$/.test(t.text)) {
      throw invalidFilter(`expected a non-negative integer after ${clause}`, t.pos)
    }
    return t.value
  }

  private or(depth: number): Condition {
    const parts = [this.and(depth)]
    while (this.isWord('or')) {
      this.next()
      parts.push(this.and(depth))
    }
    return combine('or', parts)
  }

  private and(depth: number): Condition {
    const parts = [this.unary(depth)]
    while (this.isWord('and')) {
      this.next()
      parts.push(this.unary(depth))
    }
    return combine('and', parts)
  }

  private unary(depth: number): Condition {
    if (depth > MAX_DEPTH) throw invalidFilter(`nesting deeper than ${MAX_DEPTH}`, this.peek().pos)
    if (this.isWord('not')) {
      this.next()
      return { type: 'not', inner: this.unary(depth + 1) }
    }
    if (this.isOp('(')) {
      this.next()
      const inner = this.or(depth + 1)
      this.expectOp(')')
      return inner
    }
    if (this.isWord('true') || this.isWord('false')) {
      const value = this.isWord('true')
      this.next()
      return { type: 'const', value }
    }
    return this.comparison()
  }

  private operand(): Operand {
    const t = this.next()
    const name = t.kind === 'ident' ? t.text : ''
    if (name === '') throw invalidFilter('expected a field name', t.pos)
    // A dotted field name of its own (`actor.id`) before the `tags.NAME` form.
    const exact = Object.hasOwn(this.fields, name) ? this.fields[name] : undefined
    if (exact && exact.type !== 'tags') return { spec: exact }
    const dot = name.indexOf('.')
    const base = dot < 0 ? name : name.slice(0, dot)
    const spec = Object.hasOwn(this.fields, base) ? this.fields[base] : undefined
    const known = Object.keys(this.fields).join(', ')
    if (!spec) throw invalidFilter(`unknown field (filterable fields: ${known})`, t.pos, name)
    if (spec.type === 'tags') {
      const tag = dot < 0 ? '' : name.slice(dot + 1)
      if (tag === '') throw invalidFilter(`use ${base}.NAME to compare a tag`, t.pos, name)
      return { spec, tag }
    }
    if (dot >= 0) throw invalidFilter(`unknown field (filterable fields: ${known})`, t.pos, name)
    return { spec }
  }

  private comparison(): Condition {
    const fieldPos = this.peek().pos
    if (++this.comparisons > this.maxComparisons) {
      throw invalidFilter(`more than ${this.maxComparisons} comparisons`, fieldPos)
    }
    const field = this.operand()
    const type = field.tag === undefined ? field.spec.type : 'tags'
    const negate = this.isWord('not')
    if (negate) this.next()
    const word = this.peek()
    if (this.isWord('contains', word) || this.isWord('icontains', word)) {
      this.next()
      if (type !== 'string' && type !== 'tags') {
        throw invalidFilter('contains needs a string field', word.pos)
      }
      const value = this.next()
      if (value.kind !== 'string') throw invalidFilter('expected a quoted string', value.pos)
      const insensitive = this.isWord('icontains', word)
      return { type: 'contains', field, value: value.value, insensitive, negate }
    }
    if (this.isWord('in', word)) {
      this.next()
      this.expectOp('[')
      const values = [this.literal(field)]
      while (this.isOp(',')) {
        this.next()
        values.push(this.sameKind(values[0], this.literal(field), word.pos))
      }
      this.expectOp(']')
      return { type: 'in', field, values, negate }
    }
    if (this.isWord('between', word)) {
      this.next()
      if (type === 'boolean') throw invalidFilter('between needs an ordered field', word.pos)
      const lower = this.literal(field)
      if (!this.isWord('and')) throw invalidFilter('expected "and"', this.peek().pos)
      this.next()
      const upper = this.sameKind(lower, this.literal(field), word.pos)
      return { type: 'between', field, lower, upper, negate }
    }
    if (negate) throw invalidFilter('expected contains, icontains, in or between', word.pos)
    const op = word.kind === 'op' ? COMPARE_OPS.find((o) => o === word.text) : undefined
    if (op !== undefined) {
      this.next()
      if (this.isWord('null')) {
        this.next()
        if (op !== '=' && op !== '!=')
          throw invalidFilter('null compares only with = or !=', word.pos)
        return { type: 'null', field, negate: op === '!=' }
      }
      if (type === 'boolean' && op !== '=' && op !== '!=') {
        throw invalidFilter('a boolean field compares only with = or !=', word.pos)
      }
      return { type: 'compare', field, op, value: this.literal(field) }
    }
    if (type === 'boolean') return { type: 'bool', field }
    throw invalidFilter('expected an operator', word.kind === 'end' ? word.pos : fieldPos)
  }

  /**
   * The literals of one `in` or `between` share one kind: a tag compared with a number and a
   * string at once has no single order, and PostgreSQL refuses to compare across JSON types.
   */
  private sameKind(first: Literal | undefined, next: Literal, pos: number): Literal {
    if (first !== undefined && first.kind !== next.kind) {
      throw invalidFilter(
        `the values of one in or between must share one type (${first.kind} and ${next.kind})`,
        pos,
      )
    }
    return next
  }

  private literal(field: Operand): Literal {
    const t = this.next()
    const type = field.tag === undefined ? field.spec.type : 'tags'
    const bool = this.isWord('true', t) || this.isWord('false', t)
    if (type === 'boolean' || (type === 'tags' && bool)) {
      if (bool) return { kind: 'boolean', value: this.isWord('true', t) }
      throw invalidFilter('expected true or false', t.pos)
    }
    if (type === 'datetime') {
      if (t.kind === 'datetime') return { kind: 'datetime', value: t.value }
      const raw = t.kind === 'string' ? t.value : ''
      const ms = t.kind === 'string' ? Date.parse(raw) : Number.NaN
      if (!Number.isNaN(ms)) return { kind: 'datetime', value: datetimeValue(ms, t.pos, raw) }
      throw invalidFilter('expected datetime(...)', t.pos)
    }
    if (type === 'tags' && t.kind === 'number') return { kind: 'number', value: t.value }
    if (t.kind !== 'string') throw invalidFilter('expected a quoted string', t.pos)
    return { kind: 'string', value: t.value }
  }
}

/**
 * Parses a filter in the edge API's filter language (ZitiQL: comparisons, contains, icontains,
 * in, between, null checks, true/false, bare booleans, and/or/not, parentheses, then optional
 * `sort by`, `skip` and `limit` clauses) over the given fields. Throws AppError INVALID_FILTER,
 * with the position of the fault, on anything else.
 */
export function parseFilter(
  text: string | undefined,
  fields: FieldMap,
  sortable: Record<string, string> = {},
  /** The most comparisons the filter may make (each costs the database a test, or a search). */
  maxComparisons = MAX_COMPARISONS,
): FilterQuery {
  if (text !== undefined && text.length > MAX_FILTER_LENGTH) {
    throw invalidFilter(`longer than ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH)
  }
  checkControls(text ?? '')
  return new Parser(tokenize(text ?? ''), fields, sortable, maxComparisons).query()
}
