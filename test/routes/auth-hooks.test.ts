import { describe, expect, it } from 'vitest'
import { sameCodeUnits } from '../../src/routes/auth-hooks.js'

// The comparison of a connection's bearer token with the one it presented before (the key of
// the verified-token cache is reused only when they are the same).
describe('sameCodeUnits', () => {
  it('holds for the same code units and for nothing else', () => {
    const token = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl'
    expect(sameCodeUnits(token, `${token.slice(0, 10)}${token.slice(10)}`)).toBe(true)
    expect(sameCodeUnits('', '')).toBe(true)
    expect(sameCodeUnits(token, `${token.slice(0, -1)}m`)).toBe(false) // the last one differs
    expect(sameCodeUnits(token, `x${token.slice(1)}`)).toBe(false) // the first one differs
    expect(sameCodeUnits(token, token.slice(0, -1))).toBe(false)
    expect(sameCodeUnits(token.slice(0, -1), token)).toBe(false)
    expect(sameCodeUnits('', 'a')).toBe(false)
  })

  it('tells apart code units that differ above their low byte, lone surrogates too', () => {
    expect(sameCodeUnits('abc', 'ab\u0163')).toBe(false) // c is U+0063
    expect(sameCodeUnits('a\uD800', 'a\uD801')).toBe(false)
    expect(sameCodeUnits('a\uD800', 'a\uDC00')).toBe(false)
    expect(sameCodeUnits('a\uD800', 'a\uD800')).toBe(true)
    expect(sameCodeUnits('\u{1F600}', '\u{1F600}')).toBe(true)
    expect(sameCodeUnits('\u{1F600}', '\u{1F601}')).toBe(false)
  })
})
