import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { AppError } from '../../../src/errors.js'
import type { FieldMap } from '../../../src/store/query/filter.js'
import { parseFilter } from '../../../src/store/query/filter.js'
import { compileCondition } from '../../../src/store/query/filter-sql.js'
import {
  postgresDialect,
  type SqlDialect,
  sqliteDialect,
} from '../../../src/store/query/sql-dialect.js'

const FIELDS: FieldMap = {
  name: { column: 'name', type: 'string' },
  enabled: { column: 'enabled', type: 'boolean' },
  createdAt: { column: 'created_at', type: 'datetime' },
  tags: { column: 'tags', type: 'tags' },
  issuer: {
    column: 'issuer',
    type: 'string',
    search: (value, param) => (value.length < 3 ? undefined : `id IN (${param(`fts:${value}`)})`),
  },
}
const SORTABLE = { name: 'name', createdAt: 'created_at' }

/** SQL and bound values of a filter, in SQLite. */
function sql(text: string, dialect: SqlDialect = sqliteDialect) {
  const q = parseFilter(text, FIELDS, SORTABLE)
  return compileCondition(q.where, dialect)
}

/** The INVALID_FILTER reason a text gets. */
function reason(text: string): string {
  try {
    parseFilter(text, FIELDS, SORTABLE)
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    const e = err as AppError // checked just above
    expect(e.code).toBe('INVALID_FILTER')
    expect(e.fieldCause?.field).toBe('filter')
    return e.fieldCause?.reason ?? ''
  }
  throw new Error(`no error for ${text}`)
}

describe('filter parser and SQLite compiler', () => {
  it('compiles comparisons with every value bound, never written into the SQL', () => {
    expect(sql('name = "a"')).toEqual({ sql: 'name = ?', params: ['a'] })
    expect(sql('name != "a"')).toEqual({ sql: 'name IS NOT ?', params: ['a'] })
    expect(sql('enabled = false')).toEqual({ sql: 'enabled = ?', params: [0] })
    expect(sql('enabled')).toEqual({ sql: 'enabled = 1', params: [] })
    expect(sql('not enabled')).toEqual({ sql: 'NOT (enabled = 1)', params: [] })
    expect(sql('name = null')).toEqual({ sql: 'name IS NULL', params: [] })
    expect(sql('name != null')).toEqual({ sql: 'name IS NOT NULL', params: [] })
    expect(sql('name in ["a", "b"]')).toEqual({ sql: 'name IN (?, ?)', params: ['a', 'b'] })
    expect(sql('name not in ["a"]')).toEqual({ sql: 'NOT (name IN (?))', params: ['a'] })
    expect(sql('name >= "a" and name <= "b"')).toEqual({
      sql: 'name >= ? AND name <= ?',
      params: ['a', 'b'],
    })
  })

  it('gives and precedence over or, and keeps parentheses', () => {
    expect(sql('name = "a" or name = "b" and enabled').sql).toBe(
      'name = ? OR (name = ? AND enabled = 1)',
    )
    expect(sql('(name = "a" or name = "b") and enabled').sql).toBe(
      '(name = ? OR name = ?) AND enabled = 1',
    )
    expect(sql('not (name = "a" or enabled)').sql).toBe('NOT (name = ? OR enabled = 1)')
  })

  it('reads keywords in any case and true/false as whole conditions', () => {
    expect(sql('name CONTAINS "x" AND NOT enabled OR enabled = TRUE').sql).toBe(
      '(instr(name, ?) > 0 AND NOT (enabled = 1)) OR enabled = ?',
    )
    expect(sql('true')).toEqual({ sql: '1 = 1', params: [] })
    expect(sql('FALSE')).toEqual({ sql: '1 = 0', params: [] })
    expect(sql('')).toEqual({ sql: '1 = 1', params: [] })
  })

  it('compiles contains, icontains and their negations, with the search hook first', () => {
    expect(sql('name contains "a%_"')).toEqual({ sql: 'instr(name, ?) > 0', params: ['a%_'] })
    expect(sql('name icontains "A"')).toEqual({
      sql: 'instr(lower(name), lower(?)) > 0',
      params: ['A'],
    })
    expect(sql('name not contains "a"').sql).toBe('NOT (name IS NOT NULL AND instr(name, ?) > 0)')
    expect(sql('issuer contains "corp"')).toEqual({
      sql: '(id IN (?)) AND instr(issuer, ?) > 0',
      params: ['fts:corp', 'corp'],
    })
  })

  it('reads quoted strings with the escapes of the grammar', () => {
    expect(sql(String.raw`name = "a\"b\\c\n\t"`).params).toEqual(['a"b\\c\n\t'])
    expect(sql('name = "x or 1=1 --"').params).toEqual(['x or 1=1 --'])
  })

  it('compares datetimes, half-open between, and tags', () => {
    expect(sql('createdAt >= datetime(2026-11-22T08:00:00Z)')).toEqual({
      sql: 'created_at >= ?',
      params: ['2026-11-22T08:00:00.000Z'],
    })
    expect(
      sql(
        'createdAt between datetime(2026-01-01T00:00:00Z) and datetime(2026-02-01T01:00:00+01:00)',
      ),
    ).toEqual({
      sql: '(created_at >= ? AND created_at < ?)',
      params: ['2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
    })
    expect(sql('createdAt not between "2026-01-01" and "2027-01-01"').sql).toBe(
      'NOT (created_at >= ? AND created_at < ?)',
    )
    expect(sql('tags.team = "a"')).toEqual({
      sql: `json_extract(tags, '$."team"') = ?`,
      params: ['a'],
    })
    expect(sql('tags.rank > 2').params).toEqual([2])
    expect(sql('tags.managed = true').params).toEqual([1])
    expect(sql('tags.team = null').sql).toBe(`json_extract(tags, '$."team"') IS NULL`)
  })

  it('reads sort by, skip and limit clauses at the end, in any case', () => {
    const q = parseFilter(
      'name contains "c" SORT BY name DESC, createdAt skip 2 LIMIT 5',
      FIELDS,
      SORTABLE,
    )
    expect(q.sort).toEqual([
      { column: 'name', desc: true },
      { column: 'created_at', desc: false },
    ])
    expect([q.skip, q.limit]).toEqual([2, 5])
    expect(parseFilter('true limit none', FIELDS, SORTABLE).limit).toBe('none')
    expect(parseFilter('limit 3', FIELDS, SORTABLE)).toMatchObject({
      where: { type: 'const', value: true },
      limit: 3,
      skip: undefined,
    })
    expect(parseFilter('sort by name', FIELDS, SORTABLE).sort).toEqual([
      { column: 'name', desc: false },
    ])
    expect(parseFilter('skip 1', FIELDS, SORTABLE).skip).toBe(1)
  })

  it.each([
    ['name = ', 'expected a quoted string at position 7'],
    ['name = "x', 'unterminated string at position 7'],
    [String.raw`name = "\q"`, 'unknown escape'],
    [
      'secret = "x"',
      'unknown field (filterable fields: name, enabled, createdAt, tags, issuer) at position 0',
    ],
    ['constructor = "x"', 'unknown field'],
    ['__proto__', 'unknown field'],
    ['toString.x = "y"', 'unknown field'],
    ['name.x = "y"', 'unknown field'],
    ['tags = "x"', 'use tags.NAME to compare a tag at position 0'],
    ['name = "x" and', 'expected a field name at position 14'],
    ['name "x"', 'expected an operator at position 0'],
    ['name', 'expected an operator at position 4'],
    ['enabled = "yes"', 'expected true or false at position 10'],
    ['enabled > true', 'a boolean field compares only with = or != at position 8'],
    ['enabled contains "x"', 'contains needs a string field at position 8'],
    ['name > null', 'null compares only with = or != at position 5'],
    ['name not = "x"', 'expected contains, icontains, in or between at position 9'],
    ['name in "x"', 'expected "[" at position 8'],
    ['name in ["x"', 'expected "]" at position 12'],
    ['name in []', 'expected a quoted string at position 9'],
    ['(name = "x"', 'expected ")" at position 11'],
    ['name = "x")', 'unexpected input at position 10'],
    ['name = "x"; DROP TABLE t', 'unexpected ";" at position 10'],
    ['name ! "x"', 'unexpected "!" at position 5'],
    ['name = 5', 'expected a quoted string at position 7'],
    ['createdAt > datetime(tomorrow)', 'expected an RFC 3339 date-time at position 21'],
    ['createdAt > datetime(2026-01-01T00:00:00Z', 'unterminated datetime( at position 12'],
    ['createdAt > "soon"', 'expected datetime(...) at position 12'],
    [
      'createdAt between datetime(2026-01-01T00:00:00Z) datetime(2027-01-01T00:00:00Z)',
      'expected "and"',
    ],
    ['enabled between true and false', 'between needs an ordered field at position 8'],
    ['true limit', 'expected a non-negative integer after limit at position 10'],
    ['true limit -1', 'expected a non-negative integer after limit at position 11'],
    ['true limit 1.5', 'expected a non-negative integer after limit'],
    ['true skip x', 'expected a non-negative integer after skip at position 10'],
    ['true sort name', 'expected "by" at position 10'],
    ['true sort by secret', 'expected a sort field (name, createdAt) at position 13'],
    ['true sort by constructor', 'expected a sort field'],
    ['true sort by name sideways', 'unexpected input at position 18'],
    ['true limit 5 skip 1', 'unexpected input at position 13'],
    ['true limit 5 sort by name', 'unexpected input at position 13'],
    ['limit 5 name = "x"', 'unexpected input at position 8'],
    ['name = "x" limit none none', 'unexpected input at position 22'],
    [`${'('.repeat(40)}enabled${')'.repeat(40)}`, 'nesting deeper than 32'],
    [`${'not '.repeat(40)}enabled`, 'nesting deeper than 32'],
    ['a'.repeat(4097), 'longer than 4096 characters'],
    ['name = "é" and @', 'unexpected "@" at position 15'],
  ])('refuses %s', (text, expected) => {
    expect(reason(text)).toContain(expected)
    expect(reason(text)).toMatch(/at position \d+$/)
  })

  it('binds through the PostgreSQL dialect: $n placeholders in text order, LIKE escaping', () => {
    const pg = postgresDialect
    expect(sql('name icontains "50%_\\\\" and enabled or createdAt < "2026-01-01"', pg)).toEqual({
      sql: `(name ILIKE $1 ESCAPE '\\' AND enabled = true) OR created_at < $2::timestamptz`,
      params: ['%50\\%\\_\\\\%', '2026-01-01T00:00:00.000Z'],
    })
    expect(sql('enabled != false', pg)).toEqual({
      sql: 'enabled IS DISTINCT FROM $1',
      params: [false],
    })
  })

  it('answers any text with a query or INVALID_FILTER, never another error', () => {
    const words = fc.constantFrom(
      'name',
      'enabled',
      'createdAt',
      'tags.a',
      'tags',
      'and',
      'or',
      'not',
      'contains',
      'in',
      'between',
      'sort',
      'by',
      'skip',
      'limit',
      'none',
      'true',
      'null',
      '=',
      '!=',
      '>=',
      '(',
      ')',
      '[',
      ']',
      ',',
      '"x"',
      '"\\',
      '5',
      '-1',
      'datetime(2026-01-01T00:00:00Z)',
      'datetime(',
      'constructor',
      '__proto__',
    )
    const texts = fc.oneof(
      fc.array(words, { maxLength: 12 }).map((w) => w.join(' ')),
      fc.string(),
    )
    fc.assert(
      fc.property(texts, (text) => {
        try {
          compileCondition(parseFilter(text, FIELDS, SORTABLE).where, sqliteDialect)
        } catch (err) {
          expect(err).toBeInstanceOf(AppError)
          expect((err as AppError).code).toBe('INVALID_FILTER') // checked just above
        }
      }),
      { seed: 14, numRuns: 2000 },
    )
  })
})
