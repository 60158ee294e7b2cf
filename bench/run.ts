import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { CONNECTIONS, DURATION_S, measure, paired, type Result, ROUNDS, report } from './common.js'
import { type Controller, startController } from './controller.js'
import { benchLists100k } from './lists-100k.js'
import { benchLogin, distinctLogins, LOGIN_TOKENS, loginFixture, warmLogins } from './login.js'
import { benchMemory } from './memory.js'
import { benchMetrics } from './metrics.js'
import { benchPasswordFlood } from './password-flood.js'
import { freePort, startProcess } from './processes.js'
import { benchSecondary } from './secondary.js'
import { benchTokenRules } from './token-rules.js'

const PG_SERVER = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const summary: string[] = []
const goal = (name: string, ratio: number, target: number) =>
  summary.push(
    `${name.padEnd(58)} ${ratio.toFixed(2)}  (goal ${target}) ${ratio >= target ? 'met' : 'NOT met'}`,
  )

/** A database of the bench's own on the PostgreSQL server, or undefined when none answers. */
async function benchDatabase(name: string): Promise<string | undefined> {
  const admin = new pg.Client({ connectionString: PG_SERVER, connectionTimeoutMillis: 2000 })
  try {
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.query(`CREATE DATABASE ${name}`)
    const url = new URL(PG_SERVER)
    url.pathname = `/${name}`
    return url.toString()
  } catch {
    return undefined
  } finally {
    await admin.end().catch(() => {})
  }
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_SERVER })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.end()
}

/** A route measured for a goal, warmed up in the first round only. */
const route =
  (url: string, pid: number, headers?: () => Record<string, string>) => (round: number) =>
    measure(url, { pid, warmup: round === 0, ...(headers ? { headers } : {}) })

async function lists(ctrl: Controller, bare: (round: number) => Promise<Result>, label: string) {
  const admin = () => ({ 'zt-session': ctrl.token })
  const client = await paired(
    `${label} client signer list (100 signers)`,
    'bare',
    bare,
    route(`${ctrl.base}/edge/client/v1/external-jwt-signers`, ctrl.pid),
  )
  const signers = await paired(
    `${label} management signer list (limit 10)`,
    'bare',
    bare,
    route(`${ctrl.base}/edge/management/v1/external-jwt-signers`, ctrl.pid, admin),
  )
  const identities = await paired(
    `${label} management identity list (limit 10)`,
    'bare',
    bare,
    route(`${ctrl.base}/edge/management/v1/identities`, ctrl.pid, admin),
  )
  return { client, signers, identities }
}

/** Goal of issue 26: login and secondary factor through a signer with token rules. */
async function tokenRules(ctrl: Controller): Promise<void> {
  const rules = await benchTokenRules(ctrl)
  goal('26. RS256 login, signer with token rules / without', rules.login, 0.95)
  goal('26. secondary factor, signer with token rules / without', rules.secondary, 0.95)
}

/** `BENCH_ONLY=token-rules`: just that part, on SQLite as `npm start` runs it. */
async function onlyTokenRules(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-'))
  const ctrl = await startController(join(dir, 'bench.db'))
  await tokenRules(ctrl)
  await ctrl.stop()
  rmSync(dir, { recursive: true, force: true })
  console.log('\nsummary (ratios of this run):')
  for (const line of summary) console.log(`  ${line}`)
}

async function main(): Promise<void> {
  if (process.env.BENCH_ONLY === 'token-rules') return onlyTokenRules()
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-'))
  const here = dirname(fileURLToPath(import.meta.url))
  const barePort = await freePort()
  const bareUrl = `http://127.0.0.1:${barePort}`
  const bare = await startProcess(join(here, 'bare-server.js'), bareUrl, '/hello', {
    PORT: String(barePort),
  })
  console.log(
    `autocannon: ${CONNECTIONS} connections, ${DURATION_S} s per route, loopback; each server in its own process, default log level; each goal's baseline and target measured in turns, ${ROUNDS} rounds, median ratio`,
  )
  const baseline = route(`${bareUrl}/hello`, bare.pid)
  const first = await baseline(0)
  report('bare Fastify route (baseline)', first, first.rps, 'bare')

  // SQLite, as `npm start` runs it.
  const sqlite = await startController(join(dir, 'bench.db'), { signers: 100 })
  for (let i = 0; i < 20; i++) {
    await sqlite.call('POST', '/edge/management/v1/identities', { name: `user-${i}` })
  }
  const sq = await lists(sqlite, baseline, 'SQLite')
  goal('1. client signer list / bare route', sq.client, 0.8)
  goal('3. management signer list / bare route', sq.signers, 0.4)
  goal('3. management identity list / bare route', sq.identities, 0.4)
  const fixture = await loginFixture(sqlite)
  goal(
    '2. RS256 login, distinct tokens / sequential jwtVerify',
    await benchLogin(sqlite, fixture),
    0.6,
  )
  goal(
    'JWT logins during a password flood / without (issue 29)',
    await benchPasswordFlood(sqlite, fixture),
    0.5,
  )
  goal(
    '4. secondary factor / same route without',
    await benchSecondary(sqlite.base, sqlite.call, sqlite.pid),
    0.9,
  )
  await tokenRules(sqlite)

  // PostgreSQL, one instance, against the SQLite figures of the same run.
  const pgUrl = await benchDatabase('ctrl_bench')
  if (pgUrl) {
    const postgres = await startController(pgUrl, { signers: 100 })
    const pgLists = await lists(postgres, baseline, 'PostgreSQL')
    const pgFixture = await loginFixture(postgres)
    await warmLogins(postgres, pgFixture, 'RS256')
    const loginRatio = await paired(
      'PostgreSQL ext-jwt login RS256, distinct tokens',
      'SQLite',
      async () => distinctLogins(sqlite, await fixture.tokens('RS256', LOGIN_TOKENS)),
      async () => distinctLogins(postgres, await pgFixture.tokens('RS256', LOGIN_TOKENS)),
    )
    goal('PostgreSQL RS256 login / SQLite (issue 11)', loginRatio, 0.7)
    summary.push(
      `PostgreSQL client list / SQLite client list: ${(pgLists.client / sq.client).toFixed(2)}`,
    )
    pgFixture.close()
    await postgres.stop()
  } else {
    console.log(`PostgreSQL at ${PG_SERVER} does not answer: PostgreSQL figures skipped`)
  }
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
  if (pgUrl) await dropDatabase('ctrl_bench')
  await benchMetrics(dir)
  rmSync(dir, { recursive: true, force: true })
  console.log('\nsummary (ratios of this run):')
  for (const line of summary) console.log(`  ${line}`)
}

await main()
