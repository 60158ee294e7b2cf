import { beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { type Contract, loadContract, SPEC_AVAILABLE } from './edge-api-spec.js'

// The admin console's reads of role attributes and summary counts, against OpenZiti's
// `listRoleAttributes` and `listSummaryCounts` (the skip notice is printed by contract.test.ts).

let management: Contract
beforeAll(() => {
  if (SPEC_AVAILABLE) management = loadContract('management')
})

const M = '/edge/management/v1'

describe.skipIf(!SPEC_AVAILABLE)('console reads conform to the edge API specification', () => {
  it('identity role attributes and summary counts', async () => {
    const app = await buildTestApp()
    const call = caller(app, await login(app))
    await call('POST', `${M}/identities`, { name: 'a', roleAttributes: ['sales', 'emea'] })
    for (const [path, url] of [
      ['/identity-role-attributes', `${M}/identity-role-attributes?limit=-1`],
      ['/summary', `${M}/summary`],
    ] as const) {
      const res = await call('GET', url)
      expect(res.statusCode, res.body).toBe(200)
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(management.check(path, 'get', 200, res.json()), url).toEqual([])
    }
    // The validator does look at these bodies: a count that is not an integer is refused.
    const wrong = { data: { identities: 'two' }, meta: {} }
    expect(management.check('/summary', 'get', 200, wrong)).not.toEqual([])
  })
})
