import { Writable } from 'node:stream'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  buildTestApp,
  caller,
  forEachStore,
  login,
  testClock,
} from '../helpers/app.js'
import { openTestStore, PG_URL } from '../helpers/stores.js'

const BASE = '/edge/management/v1/identities'

function logCapture() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _e, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean))
      done()
    },
  })
  return { lines, stream }
}

describe.skipIf(!PG_URL)('the last-admin race (PostgreSQL)', () => {
  it('two admins demoting each other at once always leave one enabled admin (30 rounds)', async () => {
    const app = await buildTestApp({ storeKind: 'postgres', config: { dbPoolSize: 8 } })
    const adminToken = await login(app)
    const me = (
      await caller(app, adminToken)('GET', '/edge/management/v1/current-api-session')
    ).json().data.identityId as string
    const made = await caller(app, adminToken)('POST', BASE, { name: 'deputy', isAdmin: true })
    const deputy = made.json().data.id as string
    await caller(app, adminToken)('PUT', `${BASE}/${deputy}/password`, {
      password: 'deputy-password-1',
    })
    const tokens = { [me]: adminToken, [deputy]: await login(app, 'deputy', 'deputy-password-1') }
    const ids = [me, deputy] as const
    for (let round = 0; round < 30; round++) {
      // Each demotes the other, in the same turn of the event loop.
      const answers = await Promise.all([
        caller(app, tokens[me] as string)('PATCH', `${BASE}/${deputy}`, { isAdmin: false }),
        caller(app, tokens[deputy] as string)('PATCH', `${BASE}/${me}`, { isAdmin: false }),
      ])
      const statuses = answers.map((a) => a.statusCode).sort()
      expect(statuses, `round ${round}`).not.toEqual([200, 200])
      // Whoever is still an admin lists the identities: exactly one enabled admin is left.
      const listed = await Promise.all(
        ids.map((id) => caller(app, tokens[id] as string)('GET', `${BASE}?limit=100`)),
      )
      const reader = listed.find((r) => r.statusCode === 200)
      if (!reader) throw new Error(`round ${round}: no admin can read any more`)
      const admins = (reader.json().data as { isAdmin: boolean; disabled: boolean }[]).filter(
        (i) => i.isAdmin && !i.disabled,
      )
      expect(admins, `round ${round}`).toHaveLength(1)
      // The one left makes the other an admin again for the next round.
      const left = ids[listed.indexOf(reader)] as string
      const other = left === me ? deputy : me
      const back = await caller(app, tokens[left] as string)('PATCH', `${BASE}/${other}`, {
        isAdmin: true,
      })
      expect(back.statusCode).toBe(200)
    }
  })
})

forEachStore((kind) => {
  describe('the start with no enabled admin', () => {
    it('promotes and enables the identity with the configured admin name, with one warn line', async () => {
      const store = await openTestStore(kind)
      onTestFinished(() => store.close())
      const now = new Date().toISOString()
      const base = {
        externalId: null,
        authPolicyId: 'default',
        tags: {},
        roleAttributes: [],
        createdAt: now,
      }
      // What a lost last admin leaves: the configured name exists, but nobody is an enabled admin.
      await store.repos.identities.insert({
        ...base,
        id: 'was-admin',
        name: ADMIN_USER,
        isAdmin: false,
        isDefaultAdmin: true,
        disabled: true,
        updatedAt: now,
      })
      await store.repos.identities.insert({
        ...base,
        id: 'other',
        name: 'other',
        isAdmin: true,
        isDefaultAdmin: false,
        disabled: true,
        updatedAt: now,
      })
      const { lines, stream } = logCapture()
      const app = await buildTestApp({
        store,
        storeKind: 'sqlite', // the store is handed in: no PostgreSQL database emptied for it
        clock: testClock(),
        logger: { level: 'warn', stream },
      })
      // It starts, and the configured admin (given the configured password, having none) manages.
      const token = await login(app, ADMIN_USER, ADMIN_PASSWORD)
      const res = await caller(app, token)('GET', `${BASE}/was-admin`)
      expect(res.statusCode).toBe(200)
      expect(res.json().data).toMatchObject({ isAdmin: true, disabled: false })
      const warned = lines.filter((l) => l.includes('no enabled admin'))
      expect(warned).toHaveLength(1)
      expect(JSON.parse(warned[0] as string).level).toBe(40)
    })

    it('does not promote an identity of that name that has an externalId (one a token may have created)', async () => {
      const store = await openTestStore(kind)
      onTestFinished(() => store.close())
      const now = new Date().toISOString()
      // Enrolled through a token whose name claim read "admin", while the admin had another name.
      await store.repos.identities.insert({
        id: 'enrolled',
        name: ADMIN_USER,
        externalId: 'someone@idp',
        isAdmin: false,
        isDefaultAdmin: false,
        disabled: false,
        authPolicyId: 'default',
        tags: {},
        roleAttributes: [],
        createdAt: now,
        updatedAt: now,
      })
      await expect(
        buildTestApp({ store, storeKind: 'sqlite', clock: testClock() }),
      ).rejects.toThrow(/has an externalId: it is not promoted/)
      const kept = await store.repos.identities.get('enrolled')
      expect(kept).toMatchObject({ isAdmin: false, disabled: false })
      expect(await store.repos.identities.passwordHash('enrolled')).toBeNull()
    })
  })
})
