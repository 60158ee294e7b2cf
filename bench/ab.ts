import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { median } from './common.js'
import { type Controller, startController } from './controller.js'
import { benchDatabase, dropDatabase } from './databases.js'
import { distinctLogins, type LoginFixture, loginFixture, warmLogins } from './login.js'

/**
 * `node dist/bench/ab.js <checkout>` (after `npm run build` here and in the other checkout): RS256
 * logins of distinct tokens through two controllers side by side, A started from the other
 * checkout's build (`<checkout>/dist/src/server.js`) and B from this one, each as `npm start` runs
 * it on a database of its own. What a change does to the login, on a machine whose speed moves too
 * much from one run to the next to compare two runs of the bench.
 *
 * Rounds of four turns in alternating order (A B B A, then B A A B), each turn a run of distinct
 * tokens (`BENCH_AB_TURN`, default 4,167); a round's figure is B's rate over A's. Two controllers
 * side by side have favoured the one started second by a few per cent, so the rounds run twice,
 * once with B started second and once with it started first, and each order's median and lowest
 * are printed, then those of all rounds, and the controllers' CPU a login (every thread, from
 * `/proc`), B's over A's, which moves less than a rate when the load generator shares the cores.
 * `BENCH_AB_ROUNDS` (default 6 an order),
 * `BENCH_AB_DB=postgres` (both on databases of their own on `BENCH_POSTGRES_URL`, default the
 * local server), `BENCH_AB_ALG` (`RS256` or `ES256`).
 */
const other = process.argv[2]
if (other === undefined) {
  console.error('usage: node dist/bench/ab.js <checkout whose build is A>')
  process.exit(2)
}
const otherServer = resolve(other, 'dist/src/server.js')
if (!existsSync(otherServer)) {
  console.error(`no ${otherServer}: build that checkout first (npm run build)`)
  process.exit(2)
}
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 6)
const TURN = Number(process.env.BENCH_AB_TURN ?? 4167)
const ALG = process.env.BENCH_AB_ALG === 'ES256' ? 'ES256' : 'RS256'
const onPostgres = process.env.BENCH_AB_DB === 'postgres'
const dir = mkdtempSync(join(tmpdir(), 'ctrl-ab-'))
/** Every round's controller CPU a login, B's over A's (every thread of each process). */
const cpuRatios: number[] = []

/** A database of its own for one side of one order. */
async function database(name: string): Promise<string> {
  if (!onPostgres) return join(dir, `${name}.db`)
  const url = await benchDatabase(`ctrl_bench_ab_${name}`)
  if (!url) throw new Error('BENCH_AB_DB=postgres: no PostgreSQL server')
  return url
}

/** One order: both controllers started (B second unless `bFirst`), rounds run; B's ratios. */
async function order(bFirst: boolean): Promise<number[]> {
  const tag = bFirst ? 'b_first' : 'b_second'
  const start = {
    a: async () => startController(await database(`a_${tag}`), { server: otherServer }),
    b: async () => startController(await database(`b_${tag}`)),
  }
  // Whatever was started is stopped, also when a later start or fixture fails.
  const controllers: Partial<Record<'a' | 'b', Controller>> = {}
  const fixtures: LoginFixture[] = []
  try {
    for (const side of bFirst ? (['b', 'a'] as const) : (['a', 'b'] as const)) {
      controllers[side] = await start[side]()
    }
    const sides: [Controller, LoginFixture][] = []
    for (const ctrl of [controllers.a, controllers.b] as Controller[]) {
      // both started above
      const fixture = await loginFixture(ctrl)
      fixtures.push(fixture)
      sides.push([ctrl, fixture])
    }
    for (const [ctrl, fixture] of sides) await warmLogins(ctrl, fixture, ALG)
    const ratios: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const rates = [0, 0]
      const cpu = [0, 0]
      for (const side of round % 2 === 0 ? [0, 1, 1, 0] : [1, 0, 0, 1]) {
        const [ctrl, fixture] = sides[side] as [Controller, LoginFixture]
        const result = await distinctLogins(ctrl, await fixture.tokens(ALG, TURN))
        if (result.errors > 0) throw new Error(`bench: ${result.errors} logins failed`)
        rates[side] = (rates[side] ?? 0) + result.rps / 2
        cpu[side] = (cpu[side] ?? 0) + (result.cpuUs ?? Number.NaN) / 2
      }
      const [rateA = 0, rateB = 0] = rates
      const [cpuA = 0, cpuB = 0] = cpu
      ratios.push(rateB / rateA)
      cpuRatios.push(cpuB / cpuA)
      console.log(
        `  B ${bFirst ? 'first' : 'second'}, round ${round + 1}: A ${rateA.toFixed(0)}, B ${rateB.toFixed(0)} logins/s, B/A ${(rateB / rateA).toFixed(3)}; controller CPU a login A ${cpuA.toFixed(0)}, B ${cpuB.toFixed(0)} µs`,
      )
    }
    return ratios
  } finally {
    for (const fixture of fixtures) fixture.close()
    // Both stopped even when one fails to stop; a failure here does not hide the run's own error.
    await Promise.allSettled(Object.values(controllers).map((ctrl) => ctrl.stop()))
    if (onPostgres) {
      for (const side of ['a', 'b']) await dropDatabase(`ctrl_bench_ab_${side}_${tag}`)
    }
  }
}

const summary = (ratios: number[]) =>
  `median ${median(ratios).toFixed(3)}, lowest ${Math.min(...ratios).toFixed(3)}`

try {
  console.log(
    `${ALG} logins of distinct tokens, ${onPostgres ? 'PostgreSQL' : 'SQLite'}, turns of ${TURN}: A = ${otherServer}, B = this build`,
  )
  const second = await order(false)
  const first = await order(true)
  console.log(`B started second: ${summary(second)}`)
  console.log(`B started first:  ${summary(first)}`)
  console.log(`all rounds:       ${summary([...second, ...first])}`)
  console.log(`controller CPU a login, B/A, all rounds: ${summary(cpuRatios)}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
