import type { Condition, Literal, Operand } from './filter-ast.js'
import type { SqlDialect } from './sql-dialect.js'

export interface SqlFragment {
  sql: string
  params: unknown[]
}

/** Collects bound values in text order and hands out their placeholders. */
export class SqlParams {
  readonly values: unknown[] = []
  constructor(private readonly dialect: SqlDialect) {}
  readonly add = (value: unknown): string => {
    this.values.push(value)
    return this.dialect.placeholder(this.values.length)
  }
}

function tagType(value: Literal | undefined): 'string' | 'number' | 'boolean' | 'any' {
  if (value === undefined) return 'any'
  return value.kind === 'datetime' ? 'string' : value.kind
}

function lhs(field: Operand, d: SqlDialect, value?: Literal): string {
  return field.tag === undefined
    ? field.spec.column
    : d.tagValue(field.spec.column, field.tag, tagType(value))
}

function bind(value: Literal, d: SqlDialect, p: SqlParams): string {
  if (value.kind === 'boolean') return p.add(d.booleanValue(value.value))
  if (value.kind === 'datetime') return d.datetime(p.add(value.value))
  return p.add(value.value)
}

function group(c: Condition, d: SqlDialect, p: SqlParams): string {
  const sql = emit(c, d, p)
  return c.type === 'and' || c.type === 'or' ? `(${sql})` : sql
}

function emit(c: Condition, d: SqlDialect, p: SqlParams): string {
  switch (c.type) {
    case 'const':
      return c.value ? '1 = 1' : '1 = 0'
    case 'and':
    case 'or':
      return c.parts.map((part) => group(part, d, p)).join(c.type === 'and' ? ' AND ' : ' OR ')
    case 'not':
      return `NOT (${emit(c.inner, d, p)})`
    case 'bool':
      return `${lhs(c.field, d)} = ${d.booleanLiteral(true)}`
    case 'null':
      return `${lhs(c.field, d)} IS ${c.negate ? 'NOT ' : ''}NULL`
    case 'compare': {
      const op = c.op === '!=' ? d.notEqual : c.op
      return `${lhs(c.field, d, c.value)} ${op} ${bind(c.value, d, p)}`
    }
    case 'contains': {
      const col = lhs(c.field, d, { kind: 'string', value: c.value })
      // The index finds candidates case-insensitively; the exact test keeps contains case-sensitive.
      const indexed = c.field.tag === undefined && d.searchHooks
      const narrowed = indexed ? c.field.spec.search?.(c.value, p.add) : undefined
      const exact = d.contains(col, c.value, c.insensitive, p.add)
      const match = narrowed ? `(${narrowed}) AND ${exact}` : exact
      return c.negate ? `NOT (${col} IS NOT NULL AND ${match})` : match
    }
    case 'in': {
      const sql = `${lhs(c.field, d, c.values[0])} IN (${c.values.map((v) => bind(v, d, p)).join(', ')})`
      return c.negate ? `NOT (${sql})` : sql
    }
    case 'between': {
      const col = lhs(c.field, d, c.lower)
      const sql = `${col} >= ${bind(c.lower, d, p)} AND ${col} < ${bind(c.upper, d, p)}`
      return c.negate ? `NOT (${sql})` : `(${sql})`
    }
  }
}

/** Compiles a parsed condition to SQL for one dialect, binding its values through `params`. */
export function compileCondition(
  c: Condition,
  d: SqlDialect,
  params = new SqlParams(d),
): SqlFragment {
  return { sql: emit(c, d, params), params: params.values }
}
