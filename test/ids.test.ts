import { describe, expect, it } from 'vitest'
import { newId, newSecret } from '../src/ids.js'

describe('ids and tokens', () => {
  it('makes 22-character base-62 ids that sort by creation time', () => {
    const early = newId(Date.parse('2026-01-01T00:00:00Z'))
    const late = newId(Date.parse('2026-01-01T00:00:00.001Z'))
    for (const id of [early, late, newId()]) expect(id).toMatch(/^[0-9A-Za-z]{22}$/)
    expect(early < late).toBe(true)
    // Same millisecond, different random part.
    const t = Date.now()
    const [a, b] = [newId(t), newId(t)]
    expect(a.slice(0, 8)).toBe(b.slice(0, 8))
    expect(a).not.toBe(b)
  })

  it('never repeats an id or a token, across many refills of their random pools', () => {
    const ids = new Set(Array.from({ length: 20_000 }, () => newId()))
    expect(ids.size).toBe(20_000)
    const tokens = Array.from({ length: 2_000 }, () => newSecret())
    expect(new Set(tokens).size).toBe(2_000)
    for (const token of tokens.slice(0, 200)) expect(token).toMatch(/^[\w-]{43}$/)
  })

  it('spreads the random characters of ids evenly over the alphabet', () => {
    const counts = new Map<string, number>()
    for (let i = 0; i < 20_000; i++) {
      for (const c of newId().slice(8)) counts.set(c, (counts.get(c) ?? 0) + 1)
    }
    expect(counts.size).toBe(62)
    const expected = (20_000 * 14) / 62
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.1)
  })
})
