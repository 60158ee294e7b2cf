import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { VerifiedTokenCache } from '../../src/jwt/verified-cache.js'
import { ConnectionKeys } from '../../src/routes/connection-keys.js'

/** ConnectionKeys over a key function that counts its calls (the hash a repeated token saves). */
function counted() {
  const hashed: string[] = []
  const keys = new ConnectionKeys((token) => {
    hashed.push(token)
    return VerifiedTokenCache.key(token)
  })
  return { keys, hashed }
}

const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl'

// The key of a connection's repeated bearer token (the verified-token cache's key, a hash of the
// token) is reused only for the very same token.
describe('ConnectionKeys', () => {
  it('hashes a token a connection repeats once, and each connection its own', () => {
    const { keys, hashed } = counted()
    const a = {}
    const b = {}
    for (let i = 0; i < 3; i++) expect(keys.key(a, TOKEN)).toBe(VerifiedTokenCache.key(TOKEN))
    expect(hashed).toHaveLength(1)
    expect(keys.key(b, TOKEN)).toBe(VerifiedTokenCache.key(TOKEN))
    expect(hashed).toHaveLength(2)
    // A new token replaces the kept one.
    const other = `${TOKEN}x`
    expect(keys.key(a, other)).toBe(VerifiedTokenCache.key(other))
    expect(keys.key(a, other)).toBe(VerifiedTokenCache.key(other))
    expect(keys.key(a, TOKEN)).toBe(VerifiedTokenCache.key(TOKEN))
    expect(hashed).toEqual([TOKEN, TOKEN, other, TOKEN])
  })

  it('never gives a kept key to a token that differs in any code unit or in length', () => {
    const variants = [
      `x${TOKEN.slice(1)}`, // the first code unit
      `${TOKEN.slice(0, 20)}A${TOKEN.slice(21)}`, // one in the middle
      `${TOKEN.slice(0, -1)}m`, // the last one
      TOKEN.slice(0, -1), // one shorter: the same words but for the padding
      `${TOKEN}\u0000`, // one longer by what the padding holds
      `${TOKEN}\u0000\u0000\u0000`,
      '',
    ]
    for (const variant of variants) {
      const { keys } = counted()
      const conn = {}
      keys.key(conn, TOKEN)
      expect(keys.key(conn, variant)).toBe(VerifiedTokenCache.key(variant))
      expect(keys.key(conn, TOKEN)).toBe(VerifiedTokenCache.key(TOKEN))
    }
  })

  it('tells apart code units that share their low byte, and never keeps a token of wide ones', () => {
    const { keys, hashed } = counted()
    const conn = {}
    keys.key(conn, 'abc')
    // U+0163 written as a byte would be 0x63, 'c'.
    expect(keys.key(conn, 'ab\u0163')).toBe(VerifiedTokenCache.key('ab\u0163'))
    expect(keys.key(conn, 'ab\u0163')).toBe(VerifiedTokenCache.key('ab\u0163'))
    expect(keys.key(conn, 'abc')).toBe(VerifiedTokenCache.key('abc'))
    expect(keys.key(conn, 'a\uD800')).toBe(VerifiedTokenCache.key('a\uD800'))
    expect(keys.key(conn, 'a\uDC00')).toBe(VerifiedTokenCache.key('a\uDC00'))
    // 'abc' is still kept: the wide tokens were hashed on every call and replaced nothing.
    expect(keys.key(conn, 'abc')).toBe(VerifiedTokenCache.key('abc'))
    expect(hashed).toEqual(['abc', 'ab\u0163', 'ab\u0163', 'a\uD800', 'a\uDC00'])
  })

  it('hashes a token longer than it keeps on every call', () => {
    const { keys, hashed } = counted()
    const conn = {}
    const long = 'a'.repeat(16 * 1024 + 1)
    expect(keys.key(conn, long)).toBe(VerifiedTokenCache.key(long))
    expect(keys.key(conn, long)).toBe(VerifiedTokenCache.key(long))
    expect(hashed).toHaveLength(2)
    const longest = 'b'.repeat(16 * 1024)
    keys.key(conn, longest)
    expect(keys.key(conn, longest)).toBe(VerifiedTokenCache.key(longest))
    expect(hashed).toHaveLength(3)
  })

  it('keeps the bytes of the token it hashed, even when hashing uses another instance', () => {
    // Every instance shares one scratch buffer: a key function that takes another key in between
    // must not leave this connection holding that other token's bytes beside this token's key.
    const inner = new ConnectionKeys()
    const outer = new ConnectionKeys((token) => {
      if (token === 'GOOD-TOKEN-ABCD') inner.key({}, 'EVIL-TOKEN-WXYZ') // as long as GOOD's
      return VerifiedTokenCache.key(token)
    })
    const conn = {}
    outer.key(conn, 'GOOD-TOKEN-ABCD')
    expect(outer.key(conn, 'EVIL-TOKEN-WXYZ')).toBe(VerifiedTokenCache.key('EVIL-TOKEN-WXYZ'))
    expect(outer.key(conn, 'GOOD-TOKEN-ABCD')).toBe(VerifiedTokenCache.key('GOOD-TOKEN-ABCD'))
  })

  it('gives every token its own key, whatever came before on which connection', () => {
    // Short tokens over few code units (a NUL, Latin-1, a wide one, a lone surrogate): sequences
    // on three connections where tokens repeat, share prefixes and differ only in their padding.
    const unit = fc.constantFrom('a', 'b', '\u0000', '\u00e9', '\u0161', '\uD800')
    const token = fc.array(unit, { maxLength: 9 }).map((units) => units.join(''))
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), token), { maxLength: 40 }),
        (calls) => {
          const keys = new ConnectionKeys()
          const conns = [{}, {}, {}]
          for (const [c, t] of calls) {
            expect(keys.key(conns[c] ?? {}, t)).toBe(VerifiedTokenCache.key(t))
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
