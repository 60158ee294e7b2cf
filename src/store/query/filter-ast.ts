/** How a public field maps onto a column, and what kind of values it compares with. */
export interface FieldSpec {
  column: string
  /** `tags`: a JSON object column, addressed as `tags.NAME`. */
  type: 'string' | 'boolean' | 'datetime' | 'tags'
  /**
   * Narrows `contains`/`icontains` through an index: SQL true (at least) for every row whose
   * column contains the value, case-insensitively, binding values through `param`; undefined when
   * the index cannot help.
   */
  search?: (value: string, param: (value: unknown) => string) => string | undefined
}
export type FieldMap = Record<string, FieldSpec>

/** A field in a condition: a column, or one key of a tags column. */
export interface Operand {
  spec: FieldSpec
  /** The key for `tags.NAME`. */
  tag?: string
}

/** A literal; datetimes are normalised ISO strings (`2026-11-22T08:00:00.000Z`). */
export type Literal =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'datetime'; value: string }

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>='

/** A parsed filter condition, independent of any SQL dialect. */
export type Condition =
  | { type: 'const'; value: boolean }
  | { type: 'and' | 'or'; parts: Condition[] }
  | { type: 'not'; inner: Condition }
  | { type: 'bool'; field: Operand }
  | { type: 'null'; field: Operand; negate: boolean }
  | { type: 'compare'; field: Operand; op: CompareOp; value: Literal }
  | { type: 'contains'; field: Operand; value: string; insensitive: boolean; negate: boolean }
  | { type: 'in'; field: Operand; values: Literal[]; negate: boolean }
  | { type: 'between'; field: Operand; lower: Literal; upper: Literal; negate: boolean }

export interface SortKey {
  column: string
  desc: boolean
}

/** A whole filter text: the condition and its optional `sort by`, `skip` and `limit` clauses. */
export interface FilterQuery {
  where: Condition
  sort: SortKey[]
  skip: number | undefined
  /** `none` for `limit none`. */
  limit: number | 'none' | undefined
}
