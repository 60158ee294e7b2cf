import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure, median, WARMUP_S } from './common.js'
import { listsController } from './lists.js'
import { secondaryFixture } from './secondary.js'

/**
 * `node dist/bench/factor-split.js` (after `npm run build`): what the secondary factor costs the
 * controller's event loop, split in two. current-identity at a fixed rate (below saturation, so
 * that a case's CPU a request does not move with its own rate), in turns of three cases:
 * - `no factor`: the user without the factor;
 * - `unchecked JWT`: the same user sending the other user's JWT as well, which its policy does not
 *   ask for and nothing checks: what the bigger request alone costs (Node's parser, the kernel);
 * - `factor`: the user whose policy asks for the JWT, checked on every request.
 * Prints, per case, the medians over the turns of the event loop's CPU a request (its thread's
 * user and system time from /proc, in clock ticks of 10 ms: a turn of 2 s at 12,000 requests a
 * second spends some 80 of them) and of the rate. `BENCH_SPLIT_RATE` (default 12,000 requests a
 * second), `BENCH_SPLIT_TURNS` (default 10), `BENCH_SPLIT_SECONDS` (default 2).
 */
const RATE = Number(process.env.BENCH_SPLIT_RATE ?? 12_000)
const TURNS = Number(process.env.BENCH_SPLIT_TURNS ?? 10)
const SECONDS = Number(process.env.BENCH_SPLIT_SECONDS ?? 2)

const dir = mkdtempSync(join(tmpdir(), 'ctrl-split-'))
const ctrl = await listsController(join(dir, 'split.db'))
const fixture = await secondaryFixture(ctrl.base, ctrl.call)
const factor = await fixture.headers('mfa-user')
const plain = await fixture.headers('plain-user')
const cases: Record<string, Record<string, string>> = {
  'no factor': plain,
  'unchecked JWT': {
    ...plain,
    ...(factor.authorization ? { authorization: factor.authorization } : {}),
  },
  factor,
}
const names = Object.keys(cases)
const seen = Object.fromEntries(names.map((n) => [n, { cpu: [] as number[], rps: [] as number[] }]))

async function turn(name: string, seconds: number): Promise<void> {
  const r = await measure(fixture.url, {
    headers: cases[name] ?? {},
    pid: ctrl.pid,
    tid: ctrl.pid, // the event loop: other threads only add noise to this route's figure
    warmup: false,
    seconds,
    rate: RATE,
  })
  if (r.errors > 0) throw new Error(`bench: ${name} had failed requests`)
  if (r.cpuUs === undefined) return
  seen[name]?.cpu.push(r.cpuUs)
  seen[name]?.rps.push(r.rps)
}

try {
  for (const name of names) await turn(name, WARMUP_S) // warm-up, not counted
  for (const name of names) seen[name] = { cpu: [], rps: [] }
  for (let i = 0; i < TURNS; i++) {
    // Alternating order, as the bench's paired rounds.
    for (const name of i % 2 ? [...names].reverse() : names) await turn(name, SECONDS)
  }
  console.log(
    `current-identity at ${RATE} requests a second, ${TURNS} turns of ${SECONDS} s per case; the event loop's CPU a request (medians):`,
  )
  for (const name of names) {
    const s = seen[name] ?? { cpu: [], rps: [] }
    console.log(
      `  ${name.padEnd(14)} ${median(s.cpu).toFixed(1).padStart(5)} µs  (${median(s.rps).toFixed(0)} req/s; turns ${s.cpu.map((c) => c.toFixed(0)).join(' ')})`,
    )
  }
} finally {
  fixture.close()
  await ctrl.stop()
  rmSync(dir, { recursive: true, force: true })
}
