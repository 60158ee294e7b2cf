import { copyFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { AuditService } from '../../src/audit/audit-service.js'
import { IntegrityCheck, ruleProblems } from '../../src/backups/integrity.js'
import { SnapshotService } from '../../src/backups/snapshot-service.js'
import type { IntegrityFacts } from '../../src/store/contract.js'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { freshPostgresUrl, openTestStore } from '../helpers/stores.js'
import { M, plantMissingSigner, signerInPolicy, tempDir } from './fixtures.js'

/** Starts a check and reads its results once it ended (the check runs in the background). */
async function runCheck(app: FastifyInstance, token: string) {
  const call = caller(app, token)
  const started = await call('POST', `${M}/database/check-data-integrity`)
  expect(started.statusCode, started.body).toBe(202)
  expect(started.json()).toEqual({ data: {}, meta: {} })
  for (;;) {
    const res = await call('GET', `${M}/database/data-integrity-results`)
    expect(res.statusCode).toBe(200)
    if (!res.json().data.inProgress) return res.json().data
    await new Promise((r) => setTimeout(r, 5))
  }
}

forEachStore((kind) => {
  it('finds nothing wrong with a sound database, in the edge API shape', async () => {
    const app = await buildTestApp()
    const token = await login(app)
    await signerInPolicy(app, token)
    const before = (await caller(app, token)('GET', `${M}/database/data-integrity-results`)).json()
    expect(before.data).toMatchObject({ inProgress: false, results: [], error: '' })
    const data = await runCheck(app, token)
    expect(data).toMatchObject({
      inProgress: false,
      fixingErrors: false,
      tooManyErrors: false,
      error: '',
      results: [],
    })
    expect(Date.parse(data.endTime)).toBeGreaterThanOrEqual(Date.parse(data.startTime))
  })

  it.skipIf(kind !== 'postgres')(
    'reports a signer removed from under a policy that names it (the controller rules only)',
    async () => {
      const url = await freshPostgresUrl()
      const app = await buildTestApp({ config: { dbPath: url } })
      const token = await login(app)
      const { signerId, policyId } = await signerInPolicy(app, token)
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        // Foreign keys are triggers, off for this session only: a fault planted by hand.
        await client.query("SET session_replication_role = 'replica'")
        await client.query('DELETE FROM signers WHERE id = $1', [signerId])
      } finally {
        await client.end()
      }
      const data = await runCheck(app, token)
      expect(data.results).toEqual([
        {
          description: `auth policy ${policyId} names signer ${signerId} in primary.extJwt.allowedSigners, which does not exist`,
          fixed: false,
        },
      ])
    },
  )
})

describe('on a SQLite snapshot with a planted problem', () => {
  it('lists the missing signer a policy names, from the foreign key check and the controller rules', async () => {
    const dir = tempDir()
    const app = await buildTestApp({
      config: { dbPath: join(tempDir(), 'controller.db'), snapshotDir: dir },
    })
    const token = await login(app)
    const { signerId, policyId } = await signerInPolicy(app, token)
    expect((await caller(app, token)('POST', `${M}/database/snapshot`)).statusCode).toBe(200)
    const planted = join(tempDir(), 'controller.db')
    copyFileSync(join(dir, readdirSync(dir)[0] as string), planted)
    plantMissingSigner(planted, signerId)

    const second = await buildTestApp({ config: { dbPath: planted } })
    const data = await runCheck(second, await login(second))
    const descriptions = data.results.map((r: { description: string }) => r.description)
    expect(descriptions).toContain(
      `auth policy ${policyId} names signer ${signerId} in primary.extJwt.allowedSigners, which does not exist`,
    )
    expect(
      descriptions.some((d: string) =>
        d.startsWith('foreign key check: a row of auth_policy_signers'),
      ),
    ).toBe(true)
  })
})

describe('the controller rules', () => {
  const sound: IntegrityFacts = {
    signerIds: ['s1'],
    policyIds: ['default'],
    policySignerRefs: [
      { policyId: 'default', field: 'secondary.requireExtJwtSigner', signerId: 's1' },
    ],
    signerEnrollPolicies: [{ signerId: 's1', policyId: 'default' }],
    identities: [
      { id: 'a', authPolicyId: 'default', externalId: 'x', isAdmin: true, disabled: false },
    ],
  }

  it('finds nothing in sound facts', () => {
    expect(ruleProblems(sound)).toEqual([])
  })

  it('reports a missing policy, a missing signer, a missing enroll policy, no enabled admin and a shared externalId', () => {
    const problems = ruleProblems({
      signerIds: [],
      policyIds: ['default'],
      policySignerRefs: sound.policySignerRefs,
      signerEnrollPolicies: [{ signerId: 's2', policyId: 'gone' }],
      identities: [
        { id: 'a', authPolicyId: 'gone', externalId: 'x', isAdmin: true, disabled: true },
        { id: 'b', authPolicyId: 'default', externalId: 'x', isAdmin: false, disabled: false },
      ],
    })
    expect(problems).toEqual([
      'identity a uses auth policy gone, which does not exist',
      'auth policy default names signer s1 in secondary.requireExtJwtSigner, which does not exist',
      'signer s2 enrolls into auth policy gone (enrollAuthPolicyId), which does not exist',
      'no enabled admin identity: nobody can manage the controller',
      'externalId "x" is held by identities a, b',
    ])
  })
})

describe('one at a time', () => {
  it('answers 429 RATE_LIMITED to a second check while one runs', async () => {
    const store = await openTestStore('sqlite')
    const check = new IntegrityCheck(store, testClock(), { info: () => {} })
    check.start()
    expect(() => check.start()).toThrowError(expect.objectContaining({ code: 'RATE_LIMITED' }))
    await check.settled()
    expect(check.results().inProgress).toBe(false)
    check.start()
    await check.settled()
    await store.close()
  })

  it('answers 429 RATE_LIMITED to a second snapshot while one is written', async () => {
    const store = await openTestStore('sqlite')
    const dir = tempDir()
    const clock = testClock()
    const quiet = { info: () => {}, error: () => {} }
    const service = new SnapshotService({
      store,
      dbPath: ':memory:',
      dir,
      keep: 7,
      clock,
      audit: AuditService.unlogged(store, clock),
      log: quiet,
    })
    const ctx = { actor: null, requestId: null }
    const first = service.take(ctx)
    await expect(service.take(ctx)).rejects.toMatchObject({ code: 'RATE_LIMITED', statusCode: 429 })
    await expect(first).resolves.toMatchObject({ bytes: expect.any(Number) })
    expect(readdirSync(dir)).toHaveLength(1)
    await store.close()
  })
})
