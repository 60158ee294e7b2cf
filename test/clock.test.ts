import { describe, expect, it } from 'vitest'
import { millisOf, systemClock } from '../src/clock.js'

describe('millisOf', () => {
  it('reads the wall clock through Date.now, and an injected clock through the clock itself', () => {
    expect(millisOf(systemClock)).toBe(Date.now)
    const before = Date.now()
    expect(millisOf(() => new Date())()).toBeGreaterThanOrEqual(before)
    expect(millisOf(() => new Date('2030-01-02T03:04:05.678Z'))()).toBe(
      Date.parse('2030-01-02T03:04:05.678Z'),
    )
  })
})
