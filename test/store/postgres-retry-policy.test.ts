import { describe, expect, it } from 'vitest'
import { ATTEMPTS, mayRetry, retryableCode } from '../../src/store/postgres/retry.js'

const pgError = (code: string) => Object.assign(new Error('from the server'), { code })

// The store's tests (deadlock-retry-postgres) make the server roll work back for real; these pin
// the policy's bounds, which those cannot reach without timing the server's deadlock detection.
describe('running again work the server rolled back', () => {
  it('only after a deadlock or a serialization failure', () => {
    expect(retryableCode(pgError('40P01'))).toBe('40P01')
    expect(retryableCode(pgError('40001'))).toBe('40001')
    for (const code of ['23505', '57014', '08006', '25P02', '40002']) {
      expect(retryableCode(pgError(code))).toBeUndefined()
    }
    expect(retryableCode(new Error('no code'))).toBeUndefined()
    expect(retryableCode({ code: '40P01' })).toBeUndefined() // not an Error
  })

  it('at most ATTEMPTS times in all, and never once the budget (the statement timeout) is spent', async () => {
    const told: [string, number][] = []
    const policy = {
      budgetMs: 10_000,
      onRetry: (sqlstate: string, attempt: number) => told.push([sqlstate, attempt]),
    }
    const now = performance.now()
    for (let attempt = 1; attempt < ATTEMPTS; attempt++) {
      expect(await mayRetry(policy, '40P01', attempt, now)).toBe(true)
    }
    expect(await mayRetry(policy, '40P01', ATTEMPTS, now)).toBe(false)
    expect(await mayRetry(policy, '40001', 1, now - 10_000)).toBe(false)
    expect(await mayRetry({ budgetMs: 0 }, '40P01', 1, performance.now())).toBe(false)
    expect(told).toEqual([
      ['40P01', 1],
      ['40P01', 2],
      ['40P01', 3],
    ])
    expect(ATTEMPTS).toBe(4)
  })
})
