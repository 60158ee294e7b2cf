import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCertController } from './cert-page.js'
import { CONNECTIONS, DURATION_S, ROUNDS, report, SLICES } from './common.js'
import { type Controller, startController } from './controller.js'
import { benchDatabase, dropDatabase } from './databases.js'
import { Goals } from './goals.js'
import { certGoal, certPage, lists, listsController, route } from './lists.js'
import { benchLists100k } from './lists-100k.js'
import { benchLogin, type LoginFixture, loginFixture } from './login.js'
import { benchMemory } from './memory.js'
import { benchMetrics } from './metrics.js'
import { benchPasswordFlood } from './password-flood.js'
import { benchPostgres } from './postgres.js'
import { startBareServer } from './processes.js'
import { benchSecondary } from './secondary.js'
import { benchTokenRules } from './token-rules.js'

const goals = new Goals()

/** Goal of issue 26: login and secondary factor through a signer with token rules. */
async function tokenRules(ctrl: Controller): Promise<void> {
  const rules = await benchTokenRules(ctrl)
  goals.ratio('26. RS256 login, signer with token rules / without', rules.login, 0.95)
  goals.ratio('26. secondary factor, signer with token rules / without', rules.secondary, 0.95)
}

/** `BENCH_ONLY=token-rules`: just that part, on SQLite as `npm start` runs it. */
async function onlyTokenRules(dir: string): Promise<void> {
  const ctrl = await startController(join(dir, 'bench.db'))
  await tokenRules(ctrl)
  await ctrl.stop()
}

/** The bare Fastify route in a process of its own: the baseline of the route goals. */
async function startBare() {
  const bare = await startBareServer()
  const url = bare.url
  console.log(
    `autocannon: ${CONNECTIONS} connections, ${DURATION_S} s per route, loopback; each server in its own process (the bare ones with the controller's --no-memory-reducer), default log level; each goal's baseline and target measured in turns, in alternating order, ${ROUNDS} rounds: median and lowest ratio (the login and secondary-factor goals: each round ${SLICES} turns of ${(DURATION_S / SLICES).toFixed(2)} s or 1/${SLICES} of the tokens, summed)`,
  )
  const baseline = route(`${url}/hello`, bare.pid)
  const first = await baseline(0)
  report('bare Fastify route (baseline)', first, first.rps, 'bare')
  return { stop: bare.stop, baseline }
}

/** `BENCH_ONLY=postgres`: what the PostgreSQL goals need (SQLite only as the login's baseline). */
async function onlyPostgres(dir: string): Promise<void> {
  const bare = await startBare()
  await benchPostgres({ bare: bare.baseline, sqliteDb: join(dir, 'login-baseline.db'), goals })
  await bare.stop()
}

/** Goal 2: RS256 login with distinct tokens against sequential jwtVerify, every round. */
async function loginGoal(ctrl: Controller, fixture: LoginFixture): Promise<void> {
  goals.ratio(
    '2. RS256 login, distinct tokens / sequential jwtVerify',
    await benchLogin(ctrl, fixture),
    0.7,
    'lowest',
  )
}

/** Goal 4: the secondary factor against the same route without, every round. */
async function secondaryGoal(ctrl: Controller): Promise<void> {
  const { factor, noise } = await benchSecondary(ctrl.base, ctrl.call, ctrl.pid)
  goals.ratio('4. secondary factor / same route without', factor, 0.9, 'lowest')
  goals.note(
    `   the route without the factor against itself, in the same turns (the machine's noise): median ${noise.median.toFixed(2)}  lowest ${noise.lowest.toFixed(2)}`,
  )
}

/** `BENCH_ONLY=certs`: the certificate page on SQLite, with its ceiling. */
async function onlyCerts(dir: string): Promise<void> {
  const bare = await startBare()
  const certs = await startCertController(join(dir, 'certs.db'))
  certGoal(goals, 'SQLite', await certPage(certs, bare.baseline, 'SQLite'))
  await certs.stop()
  await bare.stop()
}

/** `BENCH_ONLY=login`: goals 2 and 4 (SQLite login and secondary factor) alone. */
async function onlyLogin(dir: string): Promise<void> {
  const sqlite = await startController(join(dir, 'bench.db'), { signers: 100 })
  const fixture = await loginFixture(sqlite)
  await loginGoal(sqlite, fixture)
  await secondaryGoal(sqlite)
  fixture.close()
  await sqlite.stop()
}

async function everything(dir: string): Promise<void> {
  const bare = await startBare()
  const baseline = bare.baseline

  // SQLite, as `npm start` runs it.
  const sqlite = await listsController(join(dir, 'bench.db'))
  const sq = await lists(sqlite, baseline, 'SQLite')
  goals.ratio('1. client signer list / bare route', sq.client, 0.8)
  goals.ratio('3. management signer list / bare route', sq.signers, 0.4)
  goals.ratio('3. management identity list / bare route', sq.identities, 0.4)
  const certs = await startCertController(join(dir, 'certs.db'))
  certGoal(goals, 'SQLite', await certPage(certs, baseline, 'SQLite'))
  await certs.stop()

  // PostgreSQL, against the bare route and the SQLite figures of the same run. It runs before the
  // SQLite blocks that write (logins, the password flood), beside a SQLite controller that holds
  // no more than its lists' identities, as in `BENCH_ONLY=postgres`.
  await benchPostgres({
    bare: baseline,
    sqliteDb: join(dir, 'login-baseline.db'),
    sqliteLists: sq,
    goals,
  })

  const fixture = await loginFixture(sqlite)
  await loginGoal(sqlite, fixture)
  goals.ratio(
    'JWT logins during a password flood / without (issue 29)',
    await benchPasswordFlood(sqlite, fixture),
    0.5,
  )
  await secondaryGoal(sqlite)
  await tokenRules(sqlite)

  await benchMemory(sqlite, fixture)
  fixture.close()
  await sqlite.stop()
  await bare.stop()

  await benchLists100k()
  const listsDb = await benchDatabase('ctrl_bench_100k')
  if (listsDb) {
    await benchLists100k(listsDb)
    await dropDatabase('ctrl_bench_100k')
  }
  await benchMetrics(dir)
}

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY || undefined
  const parts: Record<string, (dir: string) => Promise<void>> = {
    'token-rules': onlyTokenRules,
    postgres: onlyPostgres,
    login: onlyLogin,
    certs: onlyCerts,
  }
  const run = only === undefined ? everything : parts[only]
  if (!run)
    throw new Error(
      `BENCH_ONLY=${only}: use token-rules, postgres, login or certs, or leave it unset`,
    )
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-'))
  try {
    await run(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  goals.print()
}

await main()
