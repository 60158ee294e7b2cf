import { afterEach, describe, expect, it, vi } from 'vitest'
import { paired, type Result, ROUNDS } from '../../bench/common.js'

const result = (rps: number): Result => ({ rps, p99: 0, errors: 0, requests: rps })

describe("the bench's paired turns", () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('alternates which side goes first from turn to turn and prepares each turn before either side', async () => {
    vi.spyOn(console, 'log').mockImplementation(() => {})
    const calls: string[] = []
    await paired(
      'target',
      'baseline',
      async (round, slice) => {
        calls.push(`b${round}.${slice}`)
        return result(100)
      },
      async (round, slice) => {
        calls.push(`t${round}.${slice}`)
        return result(90)
      },
      3,
      async (round, slice) => {
        calls.push(`p${round}.${slice}`)
      },
    )
    expect(calls.slice(0, 12)).toEqual([
      'p0.0',
      'b0.0',
      't0.0',
      'p0.1',
      't0.1',
      'b0.1',
      'p0.2',
      'b0.2',
      't0.2',
      'p1.0', // the order goes on alternating across rounds
      't1.0',
      'b1.0',
    ])
    expect(calls).toHaveLength(ROUNDS * 3 * 3)
    // Half the turns (rounded) each way.
    const first = calls.filter((_, i) => i % 3 === 1)
    expect(first.filter((c) => c.startsWith('b'))).toHaveLength(Math.ceil((ROUNDS * 3) / 2))
  })

  it("gives each round's summed target rate over its summed baseline rate: the median and the lowest", async () => {
    vi.spyOn(console, 'log').mockImplementation(() => {})
    // Round r's target runs at 1 - r/10 of the baseline, the last round at a tenth of it.
    const figures = await paired(
      'target',
      'baseline',
      async () => result(1000),
      async (round) => result(round === ROUNDS - 1 ? 100 : 1000 - 100 * round),
      2,
    )
    expect(figures.lowest).toBeCloseTo(0.1)
    const ratios = Array.from({ length: ROUNDS }, (_, r) => (r === ROUNDS - 1 ? 0.1 : 1 - r / 10))
    const sorted = [...ratios].sort((a, b) => a - b)
    const mid = ROUNDS >> 1
    const median =
      ROUNDS % 2
        ? (sorted[mid] as number)
        : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
    expect(figures.median).toBeCloseTo(median)
  })
})
