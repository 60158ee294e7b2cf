import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { Store } from '../../src/store/contract.js'
import { openStore } from '../../src/store/open-store.js'
import { buildTestApp, caller, login, loopbackOnlyResolver, testConfig } from '../helpers/app.js'
import { certSignerAndToken, jwtLoginStatus } from '../helpers/signers.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// An instance that starts while another changes a signer: its keys are read at start-up, and the
// change's notification may arrive after that read began but before the instance follows the
// notifications. The change must still hold on the new instance.

const SIGNERS = '/edge/management/v1/external-jwt-signers'
const ISSUER = 'https://idp.cluster-start.example'
const quiet = { info: () => {}, warn: () => {} }

describe.skipIf(!PG_URL)('an instance starting while another changes a signer', () => {
  let store: Store | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
  })

  it('holds a signer disabled through another instance during its start-up', async () => {
    const dbPath = await createTestDatabase()
    const b = await buildTestApp({ storeKind: 'postgres', config: { dbPath } })
    const callB = caller(b, await login(b))
    const { signerId, jwt } = await certSignerAndToken(callB, ISSUER)

    // Instance A's store, listening already; its start-up read of the signers is made to see the
    // signer enabled, then B disables it and A hears of it, all before A's start-up returns.
    const own = await openStore(
      { db: dbPath, poolSize: 4, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
      quiet,
      async () => {},
    )
    store = own
    const repo = own.repos.signers
    const read = repo.all.bind(repo)
    let raced = false
    repo.all = async () => {
      const signers = await read()
      if (!raced) {
        raced = true
        expect(signers.find((s) => s.id === signerId)?.enabled).toBe(true)
        const heard = new Promise<void>((resolve) =>
          own.onFeed((e) => {
            if (e.type === 'change' && e.change.entity === 'signer') resolve()
          }),
        )
        expect(
          (await callB('PATCH', `${SIGNERS}/${signerId}`, { enabled: false })).statusCode,
        ).toBe(200)
        await heard
      }
      return signers
    }
    const a = await buildApp({
      logger: false,
      resolver: loopbackOnlyResolver,
      store: own,
      config: testConfig({ dbPath, dbPoolSize: 4 }),
    })
    try {
      expect(raced).toBe(true)
      const loginA = () => jwtLoginStatus(a, jwt)
      expect(await loginA()).toBe(401)
      expect(
        (await b.inject({ method: 'GET', url: '/edge/client/v1/external-jwt-signers' })).json()
          .data,
      ).toEqual([])
      // A follows the notifications from here on: enabled again through B, the login works on A.
      await callB('PATCH', `${SIGNERS}/${signerId}`, { enabled: true })
      await within(1000, async () => expect(await loginA()).toBe(200))
    } finally {
      await a.close()
    }
  })
})
