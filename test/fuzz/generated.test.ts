import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { STORES } from '../helpers/stores.js'
import { plans, toRequest } from './generate.js'
import { startHarness } from './harness.js'

/** `npm test` runs a fixed seed briefly; `npm run fuzz` sets more runs (and any seed). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 300)
const SEED = Number(process.env.FUZZ_SEED ?? 20261122)

// Both stores: PostgreSQL refuses values (a NUL, a date past year 9999) SQLite takes.
describe.each(STORES)('generated requests against every route on %s', (kind) => {
  it(
    `answer no 5xx, every 4xx in the envelope, and change nothing when they fail (${RUNS} runs, seed ${SEED})`,
    async () => {
      const { h, ops } = await startHarness(kind)
      // The database routes are among those generated requests go to.
      expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual(
        expect.arrayContaining([
          'POST /edge/management/v1/database/snapshot',
          'POST /edge/management/v1/database/check-data-integrity',
          'GET /edge/management/v1/database/data-integrity-results',
        ]),
      )
      await fc.assert(
        fc.asyncProperty(plans(ops, h), async (plan) => {
          await h.send(plan.op.path, toRequest(plan, h))
        }),
        { seed: SEED, numRuns: RUNS },
      )
      if (process.env.FUZZ_RUNS) console.log('statuses', Object.fromEntries(h.statuses))
      expect(h.report()).toEqual([])
    },
    Math.max(20_000, RUNS * 100),
  )
})
