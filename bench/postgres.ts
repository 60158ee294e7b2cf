import { benchCapacity } from './capacity.js'
import { startCertController } from './cert-page.js'
import { paired, SLICES } from './common.js'
import type { Controller } from './controller.js'
import { benchDatabase, dropDatabase, PG_SERVER } from './databases.js'
import type { Goals } from './goals.js'
import { certGoal, certPage, type ListFigures, lists, listsController, type Run } from './lists.js'
import { distinctLogins, LOGIN_TOKENS, LOGIN_USERS, loginFixture, warmLogins } from './login.js'
import { benchPropagation, percentile } from './propagation.js'

export interface PostgresContext {
  /** The bare Fastify route, the lists' baseline. */
  bare: Run
  /**
   * Where the login's baseline keeps its database: a SQLite controller started for it, fresh as
   * the PostgreSQL one is (the run's own SQLite controller has by then stored every earlier
   * block's sessions, audit events and failed logins, and runs slower for it).
   */
  sqliteDb: string
  /** The SQLite list figures of the same run, when measured. */
  sqliteLists?: ListFigures
  goals: Goals
}

/** A database of the bench's own for `work`, dropped afterwards; false when none answers. */
async function withDatabase(name: string, work: (url: string) => Promise<void>): Promise<boolean> {
  const url = await benchDatabase(name)
  if (!url) return false
  try {
    await work(url)
  } finally {
    await dropDatabase(name)
  }
  return true
}

/** One instance on PostgreSQL: the list goals, and the RS256 login against SQLite's. */
async function oneInstance(url: string, c: PostgresContext): Promise<void> {
  const { goals } = c
  const postgres = await listsController(url)
  try {
    const pg = await lists(postgres, c.bare, 'PostgreSQL')
    goals.ratio('PostgreSQL client signer list / bare route', pg.client, 0.8)
    goals.ratio('PostgreSQL management signer list / bare route', pg.signers, 0.4)
    goals.ratio('PostgreSQL management identity list / bare route', pg.identities, 0.4)
    if (c.sqliteLists) {
      goals.note(
        `PostgreSQL client list / SQLite client list (medians): ${(pg.client.median / c.sqliteLists.client.median).toFixed(2)}`,
      )
    }
    await comparedLogins(postgres, c)
  } finally {
    await postgres.stop()
  }
}

/**
 * RS256 logins of distinct tokens on `postgres` against the same logins on a SQLite controller in
 * the same state: started for it, with the same identities and fixture.
 */
async function comparedLogins(postgres: Controller, c: PostgresContext): Promise<void> {
  const sqlite = await listsController(c.sqliteDb)
  const sqliteFixture = await loginFixture(sqlite)
  const pgFixture = await loginFixture(postgres)
  try {
    await warmLogins(postgres, pgFixture, 'RS256')
    await warmLogins(sqlite, sqliteFixture, 'RS256')
    // Both sides' tokens are signed before either runs: the second follows the first at once.
    const count = Math.ceil(LOGIN_TOKENS / SLICES)
    let sqliteTokens: string[] = []
    let pgTokens: string[] = []
    const login = await paired(
      `PostgreSQL ext-jwt login RS256, distinct tokens, ${LOGIN_USERS} identities`,
      'SQLite',
      () => distinctLogins(sqlite, sqliteTokens),
      () => distinctLogins(postgres, pgTokens),
      SLICES,
      async () => {
        sqliteTokens = await sqliteFixture.tokens('RS256', count)
        pgTokens = await pgFixture.tokens('RS256', count)
      },
    )
    c.goals.ratio('PostgreSQL RS256 login / SQLite (issue 11)', login, 0.9)
  } finally {
    pgFixture.close()
    sqliteFixture.close()
    await sqlite.stop()
  }
}

/**
 * Everything the PostgreSQL goals need, each on a database of its own: one instance's lists and
 * login, the certificate page, propagation between two instances, and the capacity inputs.
 */
export async function benchPostgres(c: PostgresContext): Promise<void> {
  const { goals } = c
  const reachable = await withDatabase('ctrl_bench', (url) => oneInstance(url, c))
  if (!reachable) {
    console.log(`PostgreSQL at ${PG_SERVER} does not answer: PostgreSQL figures skipped`)
    return
  }
  await withDatabase('ctrl_bench_certs', async (url) => {
    const ctrl = await startCertController(url)
    try {
      certGoal(goals, 'PostgreSQL', await certPage(ctrl, c.bare, 'PostgreSQL'))
    } finally {
      await ctrl.stop()
    }
  })
  await withDatabase('ctrl_bench_propagation', async (url) => {
    const figures = await benchPropagation(url)
    goals.atMost(
      `PostgreSQL propagation A -> B, p99 of ${figures.length} changes (from A's answer)`,
      percentile(
        figures.map((f) => f.fromAnswer),
        0.99,
      ),
      50,
      'ms',
    )
  })
  await withDatabase('ctrl_bench_capacity', (url) => benchCapacity('ctrl_bench_capacity', url))
}
