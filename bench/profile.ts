import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure } from './common.js'
import { benchDatabase, dropDatabase } from './databases.js'
import { listsController } from './lists.js'
import { distinctLogins, loginFixture, warmLogins } from './login.js'
import { startBareServer } from './processes.js'
import { secondaryFixture } from './secondary.js'

/**
 * `npm run bench:profile -- <load>`: runs one load (client-list, signer-list, identity-list,
 * login, secondary, no-factor) against a controller started under `--cpu-prof`, then prints where
 * its main thread spent its time: the functions with the most self time, and the share of each
 * package or file, each as a share of the busy time and in µs per request (the idle time too).
 * `BENCH_PROFILE_RATE=2500 npm run bench:profile -- login`: the same at a fixed rate.
 * `BENCH_PROFILE_INTERVAL=100`: a sample every 100 µs instead of V8's default of 1,000 (finer, and
 * dearer: the shares stay comparable within one run, not with runs at another interval).
 */
interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
}

const load = process.argv[2] ?? 'client-list'
/** How many distinct logins the login load sends (`BENCH_PROFILE_LOGINS`). */
const LOGINS = Number(process.env.BENCH_PROFILE_LOGINS ?? 15000)
const dir = mkdtempSync(join(tmpdir(), 'ctrl-profile-'))
const interval = process.env.BENCH_PROFILE_INTERVAL
process.env.BENCH_NODE_ARGS = [
  '--cpu-prof',
  `--cpu-prof-dir=${join(dir, 'prof')}`,
  ...(interval ? [`--cpu-prof-interval=${Number(interval)}`] : []),
].join(' ')
// `BENCH_PROFILE_DB=postgres`: the controller on a database of its own on the local server.
const onPostgres = process.env.BENCH_PROFILE_DB === 'postgres'
const pgUrl = onPostgres ? await benchDatabase('ctrl_bench_profile') : undefined
if (onPostgres && !pgUrl) throw new Error('BENCH_PROFILE_DB=postgres: no PostgreSQL server')
const ctrl = await listsController(pgUrl ?? join(dir, 'profile.db'))
const session = await ctrl.adminSession()
const admin = () => ({ 'zt-session': session })
/**
 * Runs the load and notes when it ran: only the profile's samples of that time are counted (not the
 * start-up or the seeding). V8 stamps samples with the monotonic clock that `process.hrtime` reads,
 * one clock for every process of the machine.
 */
let window: [number, number] = [0, Number.POSITIVE_INFINITY]
/** Requests of the profiled run: each function's time is also shown per request. */
let requests = 0
async function timed(load: () => Promise<{ rps: number; requests: number }>): Promise<number> {
  const start = Number(process.hrtime.bigint() / 1000n)
  const result = await load()
  window = [start, Number(process.hrtime.bigint() / 1000n)]
  requests = result.requests
  return result.rps
}
/**
 * `BENCH_PROFILE_RATE`: requests a second in all, for a load below saturation (where the time a
 * request keeps the event loop busy, or blocked, is not hidden by queueing); default: saturation.
 */
const RATE = process.env.BENCH_PROFILE_RATE ? Number(process.env.BENCH_PROFILE_RATE) : undefined
const rate = RATE === undefined ? {} : { rate: RATE }
let rps: number
if (load === 'bare') {
  // The baseline's own profile, for comparison: the controller above only idles meanwhile.
  const bare = await startBareServer()
  const url = bare.url
  rps = await timed(() => measure(`${url}/hello`, rate))
  await bare.stop()
} else if (load === 'client-list') {
  rps = await timed(() => measure(`${ctrl.base}/edge/client/v1/external-jwt-signers`, rate))
} else if (load === 'signer-list') {
  rps = await timed(() =>
    measure(`${ctrl.base}/edge/management/v1/external-jwt-signers`, { headers: admin, ...rate }),
  )
} else if (load === 'identity-list') {
  rps = await timed(() =>
    measure(`${ctrl.base}/edge/management/v1/identities`, { headers: admin, ...rate }),
  )
} else if (load === 'login') {
  const fixture = await loginFixture(ctrl)
  await warmLogins(ctrl, fixture, 'RS256')
  const tokens = await fixture.tokens('RS256', LOGINS)
  rps = await timed(() => distinctLogins(ctrl, tokens, undefined, RATE))
  fixture.close()
} else if (load === 'secondary' || load === 'no-factor') {
  // current-identity as the secondary-factor goal measures it, with the factor or without.
  const fixture = await secondaryFixture(ctrl.base, ctrl.call)
  const user = load === 'secondary' ? 'mfa-user' : 'plain-user'
  const headers = await fixture.headers(user)
  rps = await timed(() => measure(fixture.url, { headers, ...rate }))
  fixture.close()
} else {
  throw new Error(
    `unknown load ${load}: client-list, signer-list, identity-list, login, secondary or no-factor`,
  )
}
await ctrl.stop()
if (onPostgres) await dropDatabase('ctrl_bench_profile')

const file = readdirSync(join(dir, 'prof'))
  .sort()
  .at(load === 'bare' ? -1 : 0)
if (file === undefined) throw new Error('no profile was written')
const profile = JSON.parse(readFileSync(join(dir, 'prof', file), 'utf8')) as Profile
const self = new Map<number, number>()
let at = profile.startTime
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0
  at += delta
  if (at >= window[0] && at <= window[1]) self.set(id, (self.get(id) ?? 0) + delta)
})
// Shares of the busy time: the idle time between requests (and during setup) is left out.
const idle = profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id)
const total = [...self.entries()]
  .filter(([id]) => !idle.includes(id))
  .reduce((a, [, t]) => a + t, 0)
const byFunction = new Map<string, number>()
const byPlace = new Map<string, number>()
for (const node of profile.nodes) {
  const t = self.get(node.id) ?? 0
  const { functionName, url, lineNumber } = node.callFrame
  const place = url.includes('node_modules/')
    ? (url.split('node_modules/').pop()?.split('/').slice(0, 2).join('/') ?? url)
    : url.replace(/^file:\/\/.*\/dist\//, '')
  const fn = `${functionName || '(anonymous)'} ${place}:${lineNumber + 1}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + t)
  byPlace.set(place || '(native)', (byPlace.get(place || '(native)') ?? 0) + t)
}
const top = (m: Map<string, number>, n: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([k, v]) =>
        `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / requests).toFixed(1).padStart(6)} µs/req  ${k}`,
    )
    .join('\n')
console.log(`${load}: ${rps.toFixed(0)} req/s\n\nself time by function:\n${top(byFunction, 40)}`)
console.log(`\nself time by file or package:\n${top(byPlace, 25)}`)

// Inclusive time (self plus everything called from it) of each function, counted once per stack.
const parent = new Map<number, number>()
for (const node of profile.nodes)
  for (const child of node.children ?? []) parent.set(child, node.id)
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const inclusive = new Map<string, number>()
for (const [id, t] of self) {
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at)?.callFrame
    if (!frame) break
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules|dist)\//, '')}:${frame.lineNumber + 1}`
    if (seen.has(name)) continue
    seen.add(name)
    inclusive.set(name, (inclusive.get(name) ?? 0) + t)
  }
}
console.log(`\ninclusive time by function:\n${top(inclusive, 60)}`)
rmSync(dir, { recursive: true, force: true })
