import 'reflect-metadata'
import { createHash, X509Certificate } from 'node:crypto'
import { describe, expect, it, onTestFinished } from 'vitest'
import { ControllerRegistry } from '../../src/controllers/controller-registry.js'
import type { Store } from '../../src/store/contract.js'
import { parseListQuery } from '../../src/store/query/list-query.js'
import { CONTROLLER_LIST_SPEC } from '../../src/store/sqlite/controller-repository.js'
import { buildTestApp, caller, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCaChain } from '../helpers/built-server.js'
import { openTestStore } from '../helpers/stores.js'

const CLIENT = '/edge/client/v1/controllers'
const MANAGEMENT = '/edge/management/v1/controllers'
const IDENTITIES = '/edge/management/v1/identities'
const quiet = { warn: () => {} }

/** Another instance registered on the same store, as a second controller process would. */
async function otherInstance(store: Store, clock: () => Date, name: string): Promise<void> {
  const registry = new ControllerRegistry({
    store,
    clock,
    heartbeatMs: 5_000,
    log: quiet,
    self: { name, advertiseUrl: `https://${name}.test:1280`, certPem: '', fingerprint: '' },
  })
  await registry.start()
  onTestFinished(() => registry.stop())
}

forEachStore((kind) => {
  describe('the controllers lists', () => {
    it('show this instance in the controllerDetail shape: any session on the client API, admins only on management', async () => {
      const app = await buildTestApp({
        config: { instanceName: 'ctrl-a', advertiseUrl: 'http://ctrl-a.test:1280' },
      })
      for (const url of [CLIENT, MANAGEMENT]) {
        const anonymous = await app.inject({ method: 'GET', url })
        expect(anonymous.statusCode).toBe(401)
        expect(anonymous.json().error.code).toBe('UNAUTHORIZED')
      }
      const admin = caller(app, await login(app))
      const res = await admin('GET', MANAGEMENT)
      expect(res.statusCode).toBe(200)
      const body = res.json()
      expect(body.meta.pagination).toEqual({ limit: 10, offset: 0, totalCount: 1 })
      expect(body.data).toEqual([
        expect.objectContaining({
          name: 'ctrl-a',
          apiAddresses: {
            'edge-client': [{ url: 'http://ctrl-a.test:1280/edge/client/v1', version: 'v1' }],
            'edge-management': [
              { url: 'http://ctrl-a.test:1280/edge/management/v1', version: 'v1' },
            ],
          },
          certPem: '',
          fingerprint: '',
          isOnline: true,
          ctrlAddress: null,
        }),
      ])
      expect(body.data[0]._links.self.href).toBe(`./controllers/${body.data[0].id}`)

      const bobId = (await admin('POST', IDENTITIES, { name: 'bob', isAdmin: false })).json().data
        .id
      await admin('PUT', `${IDENTITIES}/${bobId}/password`, { password: 'bob-password-123' })
      const bob = caller(app, await login(app, 'bob', 'bob-password-123'))
      expect((await bob('GET', MANAGEMENT)).statusCode).toBe(401)
      const asClient = await bob('GET', CLIENT)
      expect(asClient.statusCode).toBe(200)
      expect(asClient.json().data).toEqual(body.data)
    })

    it('carry the TLS certificate and its fingerprint when serving HTTPS', async () => {
      const chain = await makeCaChain()
      const app = await buildTestApp({
        https: { cert: Buffer.from(chain.certPem), key: Buffer.from(chain.keyPem) },
        config: { instanceName: 'tls', port: 1443 },
      })
      const [entry] = (await caller(app, await login(app))('GET', CLIENT)).json().data
      const leaf = new X509Certificate(chain.certPem)
      expect(entry.certPem.trim()).toBe(leaf.toString().trim())
      expect(entry.fingerprint).toBe(createHash('sha1').update(leaf.raw).digest('hex'))
      expect(entry.apiAddresses['edge-client'][0].url).toBe('https://127.0.0.1:1443/edge/client/v1')
    })

    it('take filter, sort and paging, and refuse a bad one with its code', async () => {
      const store = await openTestStore(kind)
      onTestFinished(() => store.close())
      const clock = testClock()
      const app = await buildTestApp({ store, clock, config: { instanceName: 'ctrl-m' } })
      for (const name of ['ctrl-b', 'ctrl-z', 'ctrl-c']) await otherInstance(store, clock, name)
      const admin = caller(app, await login(app))
      const names = async (url: string) =>
        (await admin('GET', url)).json().data.map((c: { name: string }) => c.name)

      expect(await names(`${MANAGEMENT}?sort=name%20desc`)).toEqual([
        'ctrl-z',
        'ctrl-m',
        'ctrl-c',
        'ctrl-b',
      ])
      const page = (await admin('GET', `${MANAGEMENT}?sort=name&limit=2&offset=1`)).json()
      expect(page.data.map((c: { name: string }) => c.name)).toEqual(['ctrl-c', 'ctrl-m'])
      expect(page.meta.pagination).toEqual({ limit: 2, offset: 1, totalCount: 4 })
      expect(page.meta.filterableFields).toEqual(expect.arrayContaining(['name', 'lastJoinedAt']))
      expect(
        (
          await names(`${CLIENT}?filter=${encodeURIComponent('name in ["ctrl-b","ctrl-c"]')}`)
        ).sort(),
      ).toEqual(['ctrl-b', 'ctrl-c'])
      expect(
        await names(`${CLIENT}?filter=${encodeURIComponent('name contains "z" sort by name')}`),
      ).toEqual(['ctrl-z'])

      const badSort = await admin('GET', `${MANAGEMENT}?sort=certPem`)
      expect(badSort.statusCode).toBe(400)
      expect(badSort.json().error.code).toBe('INVALID_SORT_IDENTIFIER')
      const badFilter = await admin('GET', `${CLIENT}?filter=${encodeURIComponent('isOnline = ')}`)
      expect(badFilter.statusCode).toBe(400)
      expect(badFilter.json().error.code).toBe('INVALID_FILTER')
    })

    it('lose an instance that shut down cleanly, while the store stays open', async () => {
      const store = await openTestStore(kind)
      onTestFinished(() => store.close())
      const app = await buildTestApp({ store, config: { instanceName: 'leaving' } })
      const token = await login(app)
      expect((await caller(app, token)('GET', CLIENT)).json().data).toHaveLength(1)
      await app.close()
      const all = parseListQuery({}, CONTROLLER_LIST_SPEC)
      const { totalCount } = await store.repos.controllers.list(all)
      expect(totalCount).toBe(0)
    })
  })
})
