/**
 * What differs between the SQL stores in compiling a filter. Every value reaches the database as a
 * bound parameter; `param` binds one and returns its placeholder, in text order.
 */
export interface SqlDialect {
  /** The placeholder of the `index`-th (1-based) parameter: `?` or `$n`. */
  placeholder(index: number): string
  /** A boolean written into the SQL text (`1`/`0`, `true`/`false`). */
  booleanLiteral(value: boolean): string
  /** A boolean as a bound value. */
  booleanValue(value: boolean): unknown
  /** Null-safe inequality: true when either side is null and the other is not. */
  notEqual: string
  /** `lhs` contains `value` as a literal substring (no wildcards), optionally ignoring case. */
  contains(
    lhs: string,
    value: string,
    insensitive: boolean,
    param: (value: unknown) => string,
  ): string
  /** The value at `key` of the JSON object in `column`, comparable with a value of `type`. */
  tagValue(column: string, key: string, type: 'string' | 'number' | 'boolean' | 'any'): string
  /** A bound datetime (an ISO string) as the SQL compares it with a datetime column. */
  datetime(placeholder: string): string
  /** Whether fields' `search` hooks (SQLite's trigram FTS tables) apply. */
  searchHooks: boolean
}

/** Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern that must match them literally. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`)
}

/** A tag key as a double-quoted JSON path member (keys hold only word characters and dots). */
function jsonKey(key: string): string {
  return `"${key.replace(/[^\w.]/g, '')}"`
}

/**
 * SQLite: `?` placeholders, booleans as 1/0, timestamps as ISO text (which order as time),
 * substring tests with instr (no pattern characters), tags through json_extract.
 */
export const sqliteDialect: SqlDialect = {
  placeholder: () => '?',
  booleanLiteral: (value) => (value ? '1' : '0'),
  booleanValue: (value) => (value ? 1 : 0),
  notEqual: 'IS NOT',
  contains: (lhs, value, insensitive, param) =>
    insensitive
      ? `instr(lower(${lhs}), lower(${param(value)})) > 0`
      : `instr(${lhs}, ${param(value)}) > 0`,
  tagValue: (column, key) => `json_extract(${column}, '$.${jsonKey(key)}')`,
  datetime: (placeholder) => placeholder,
  searchHooks: true,
}

/**
 * PostgreSQL: `$n` placeholders, real booleans, timestamptz columns, substring tests with LIKE and
 * ILIKE on an escaped pattern (trigram indexes serve both), tags through jsonb operators.
 */
export const postgresDialect: SqlDialect = {
  placeholder: (index) => `$${index}`,
  booleanLiteral: (value) => (value ? 'true' : 'false'),
  booleanValue: (value) => value,
  notEqual: 'IS DISTINCT FROM',
  contains: (lhs, value, insensitive, param) =>
    `${lhs} ${insensitive ? 'ILIKE' : 'LIKE'} ${param(`%${escapeLike(value)}%`)} ESCAPE '\\'`,
  tagValue: (column, key, type) => {
    const path = `${column} -> '${key.replace(/[^\w.]/g, '')}'`
    if (type === 'number')
      return `(CASE WHEN jsonb_typeof(${path}) = 'number' THEN (${path})::numeric END)`
    if (type === 'boolean')
      return `(CASE WHEN jsonb_typeof(${path}) = 'boolean' THEN (${path})::boolean END)`
    return `(${column} ->> '${key.replace(/[^\w.]/g, '')}')`
  },
  datetime: (placeholder) => `${placeholder}::timestamptz`,
  searchHooks: false,
}
