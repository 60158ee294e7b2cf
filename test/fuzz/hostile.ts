import { isIP } from 'node:net'
import fc from 'fast-check'

/** Strings that have broken parsers, SQL, headers and lookups somewhere before. */
export const HOSTILE_STRINGS = [
  '',
  ' ',
  '😀',
  'name 😀 \u{1f469}\u200d\u{1f4bb}',
  '\u0000',
  '\u0001\u0007\u001b[31m\u007f',
  'a\r\nSet-Cookie: x=1',
  '\u2028\u2029\u202e\ufeff',
  '\ud800',
  '"',
  "'",
  '\\',
  '%',
  '%zz',
  '%00',
  '../../etc/passwd',
  "' or 1=1 --",
  '"; drop table signers; --',
  '$' + '{jndi:x}',
  '{{7*7}}',
  '<script>',
  'constructor',
  '__proto__',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'null',
  'undefined',
  'true',
  'NaN',
  '-0',
  '1e308',
  'a'.repeat(300),
  'x'.repeat(5000),
  'https://127.0.0.1:1/jwks',
  'http://localhost:1/.well-known/jwks.json',
  'file:///etc/passwd',
]

/** Field and list names that exist on every JavaScript object. */
export const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty']

export const HUGE_NUMBERS = [
  1e308,
  -1e308,
  2 ** 53 + 1,
  2 ** 64,
  -(2 ** 63),
  Number.MIN_VALUE,
  -0,
  0.5,
]

export const WRONG_TYPES: unknown[] = [true, 0, '', [], {}, null, 'true', ['a'], { a: 1 }]

/** `{a: {a: ... {}}}` nested `depth` levels. */
export function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = {}
  for (let i = 0; i < depth; i++) v = { a: v }
  return v
}

/**
 * Stands for an object nested 5000 levels deep: `loopbackOnlyJson` writes it out as text, since
 * `JSON.stringify` would run out of stack on the value itself.
 */
export const DEEP = '<nested 5000 levels>'
const DEEP_JSON = `${'{"a":'.repeat(5000)}{}${'}'.repeat(5000)}`

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.string({ maxLength: 10 }),
        fc.integer({ min: 0, max: 0x1f }),
        fc.string({ maxLength: 10 }),
      )
      .map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
  },
)

/** Any JSON value, biased towards the values that break things. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom(...HUGE_NUMBERS, ...WRONG_TYPES) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200 }).map(nested) },
  { weight: 1, arbitrary: fc.constant(DEEP) },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 4 }) },
)

/** Text a client can put in a header value (visible Latin-1, space and tab). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'null',
    'Bearer',
    'Bearer ',
    'Bearer a.b.c',
    'Basic YTpi',
    'x'.repeat(9000),
  ),
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f && (c < 0x80 || c >= 0xa0))
      .map((c) => String.fromCharCode(c)),
    maxLength: 60,
  }),
)

/** Query values, including the filter and sort language's own words. */
export const queryValue: fc.Arbitrary<string> = fc.oneof(
  hostileString,
  fc.constantFrom(
    'name = "a"',
    'name contains "😀"',
    'enabled = true and (issuer != null or not name = "x")',
    'createdAt > datetime(2020-01-01T00:00:00Z)',
    'name in ["a", "b"]',
    // Issue 29: control characters in filter strings, mixed literal types, dates out of range.
    'name contains "a\u0000b"',
    'name contains "abc\u0000def"',
    'issuer icontains "x\u0001\u001by"',
    'name = "a"\u0000',
    'tags.x between 1 and "z"',
    'tags.x in [1, "a", true]',
    'tags.x in ["a", null]',
    'createdAt > datetime(275760-09-13T00:00:00Z)',
    'createdAt > "+275760-09-13T00:00:00Z"',
    'createdAt < "0001-01-01T00:00:00+01:00"',
    'updatedAt between "2020-01-01T00:00:00Z" and "-000001-01-01T00:00:00Z"',
    '((((name = "a"',
    'name = "unterminated',
    'name asc',
    'createdAt desc, name',
    ...PROTOTYPE_NAMES.flatMap((n) => [`${n} = "a"`, `${n} = 1`, `${n} asc`, n]),
    '0',
    '-1',
    '500',
    '501',
    '1.5',
    '1e308',
    '99999999999999999999',
    'password',
    'ext-jwt',
    'cert',
  ),
)

function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  if (isIP(bare) === 4) return bare.startsWith('127.')
  if (isIP(bare) === 6) return bare === '::1'
  return true // a name: the test resolver answers only localhost and refuses the rest
}

/** A string that names an IP address outside 127.0.0.0/8 as a URL host, made harmless. */
function loopbackUrl(value: string): string {
  try {
    return isLoopback(new URL(value).hostname) ? value : 'https://127.0.0.1:1/jwks'
  } catch {
    return value
  }
}

/**
 * Serializes a body with every string that names an IP address outside 127.0.0.0/8 as a URL
 * host replaced: a signer created with it would fetch from there, and a literal address is
 * dialled without asking the resolver.
 */
export function loopbackOnlyJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'string' ? loopbackUrl(v) : v,
  ).replaceAll(JSON.stringify(DEEP), DEEP_JSON)
}
