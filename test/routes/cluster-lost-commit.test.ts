import { afterEach, describe, expect, it } from 'vitest'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { PgProxy } from '../helpers/pg-proxy.js'
import { certSignerAndToken, jwtLoginStatus } from '../helpers/signers.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// A write whose COMMIT the server carried out but whose answer never reached the instance (its
// connection dropped in between): the request fails, yet the change is stored. The instance that
// made it must come to hold what was stored, as every other instance does.

const SIGNERS = '/edge/management/v1/external-jwt-signers'
const ISSUER = 'https://idp.lost-commit.example'

describe.skipIf(!PG_URL)('a change whose commit answer was lost (PostgreSQL)', () => {
  let proxy: PgProxy | undefined
  afterEach(async () => {
    await proxy?.close()
    proxy = undefined
  })

  it('is followed by the instance that made it: a signer disabled is refused there too', async () => {
    const dbPath = await createTestDatabase()
    proxy = new PgProxy(new URL(dbPath))
    const a = await buildTestApp({ storeKind: 'postgres', config: { dbPath: await proxy.start() } })
    const b = await buildTestApp({ storeKind: 'postgres', config: { dbPath } })
    const callA = caller(a, await login(a))
    const { signerId, jwt } = await certSignerAndToken(callA, ISSUER)
    const loginThrough = (app: typeof a) => jwtLoginStatus(app, jwt)
    expect(await loginThrough(a)).toBe(200)
    await within(1000, async () => expect(await loginThrough(b)).toBe(200))

    proxy.cutNextCommitAnswer()
    const disable = await callA('PATCH', `${SIGNERS}/${signerId}`, { enabled: false })
    expect(proxy.commitsCut).toBe(1)
    // The instance cannot know the outcome: it says the database did not answer.
    expect(disable.statusCode).toBe(503)
    expect(disable.json().error.code).toBe('SERVICE_UNAVAILABLE')
    // Stored all the same: B (told by the notification) and A refuse the signer's tokens.
    await within(1000, async () => expect(await loginThrough(b)).toBe(401))
    await within(1000, async () => expect(await loginThrough(a)).toBe(401))
    const page = await callA('GET', SIGNERS)
    expect(page.json().data.map((s: { enabled: boolean }) => s.enabled)).toEqual([false])
  })

  it('forgets the sessions a login batch may have ended by the cap when its answer was lost', async () => {
    const dbPath = await createTestDatabase()
    proxy = new PgProxy(new URL(dbPath))
    const config = { maxSessionsPerIdentity: 1 }
    const a = await buildTestApp({
      storeKind: 'postgres',
      config: { dbPath: await proxy.start(), ...config },
    })
    const b = await buildTestApp({ storeKind: 'postgres', config: { dbPath, ...config } })
    const callA = caller(a, await login(a))
    const carol = (await callA('POST', '/edge/management/v1/identities', { name: 'carol' })).json()
      .data.id as string
    await callA('PUT', `/edge/management/v1/identities/${carol}/password`, {
      password: 'carol-password-1',
    })
    const current = async (app: typeof a, token: string) =>
      (
        await app.inject({
          method: 'GET',
          url: '/edge/management/v1/current-api-session',
          headers: { 'zt-session': token },
        })
      ).statusCode
    const first = await login(a, 'carol', 'carol-password-1')
    expect(await current(a, first)).toBe(200) // kept on A

    // The next login ends the first session (a cap of one), and its answer is lost.
    proxy.cutNextAnswerTo('record-logins-v4')
    const second = await a.inject({
      method: 'POST',
      url: '/edge/management/v1/authenticate?method=password',
      payload: { username: 'carol', password: 'carol-password-1' },
    })
    expect(proxy.answersCut).toBe(1)
    expect(second.statusCode).toBe(503)
    // Stored all the same: the first session is gone everywhere, on A too.
    expect(await current(b, first)).toBe(401)
    await within(1000, async () => expect(await current(a, first)).toBe(401))
  })
})
