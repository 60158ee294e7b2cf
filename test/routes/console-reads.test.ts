import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, forEachStore, login } from '../helpers/app.js'

// The two reads of OpenZiti's admin console about what this controller holds: the role
// attributes of identities (its pickers) and the summary counts (its dashboard).

const M = '/edge/management/v1'
const ATTRS = `${M}/identity-role-attributes`

forEachStore(() => {
  describe('identity role attributes and summary', () => {
    it('lists the distinct role attributes of identities, with filter, sort and paging', async () => {
      const app = await buildTestApp()
      const call = caller(app, await login(app))
      await call('POST', `${M}/identities`, { name: 'a', roleAttributes: ['sales', 'emea'] })
      const b = await call('POST', `${M}/identities`, {
        name: 'b',
        roleAttributes: ['emea', 'ops'],
      })
      const all = await call('GET', `${ATTRS}//`)
      expect(all.statusCode).toBe(200)
      expect(all.json()).toEqual({
        data: ['emea', 'ops', 'sales'],
        meta: { pagination: { limit: 10, offset: 0, totalCount: 3 }, filterableFields: ['id'] },
      })
      const q = (s: string) => call('GET', `${ATTRS}?${s}`).then((r) => r.json())
      expect((await q('sort=id%20desc&limit=2')).data).toEqual(['sales', 'ops'])
      expect((await q(`filter=${encodeURIComponent('id contains "e"')}`)).data).toEqual([
        'emea',
        'sales',
      ])
      expect((await q('limit=-1&offset=1')).data).toEqual(['ops', 'sales'])
      expect((await q('filter=name%20%3D%20%22x%22')).error.code).toBe('INVALID_FILTER')
      // A change of an identity's attributes shows at once; PATCH null empties them.
      await call('PATCH', `${M}/identities/${b.json().data.id}`, { roleAttributes: null })
      expect((await q('')).data).toEqual(['emea', 'sales'])
    })

    it('counts identities, signers, policies and API sessions', async () => {
      const app = await buildTestApp()
      const call = caller(app, await login(app))
      await call('POST', `${M}/identities`, { name: 'x' })
      const res = await call('GET', `${M}/summary/`)
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({
        data: { identities: 2, externalJwtSigners: 0, authPolicies: 1, apiSessions: 1 },
        meta: {},
      })
    })

    it('answers both to admins only', async () => {
      const app = await buildTestApp()
      const call = caller(app, await login(app))
      await call('POST', `${M}/identities`, { name: 'user' })
      const id = (await call('GET', `${M}/identities?filter=name%3D%22user%22`)).json().data[0].id
      await call('PUT', `${M}/identities/${id}/password`, { password: 'user-password-123' })
      const user = caller(app, await login(app, 'user', 'user-password-123'))
      for (const url of [ATTRS, `${M}/summary`]) {
        expect((await app.inject({ method: 'GET', url })).statusCode).toBe(401)
        const res = await user('GET', url)
        expect(res.statusCode).toBe(401)
        expect(res.json().error.code).toBe('UNAUTHORIZED')
      }
    })
  })
})
