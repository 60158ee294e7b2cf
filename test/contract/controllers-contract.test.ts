import 'reflect-metadata'
import { describe, expect, it } from 'vitest'
import { buildTestApp, forEachStore, login } from '../helpers/app.js'
import { makeCaChain } from '../helpers/built-server.js'
import { loadContract, SPEC_AVAILABLE } from './edge-api-spec.js'

describe.skipIf(!SPEC_AVAILABLE)(
  'the controllers lists conform to the edge API specification',
  () => {
    forEachStore(() => {
      it('listControllers on both APIs, over HTTP and HTTPS, and its 401', async () => {
        const chain = await makeCaChain()
        for (const https of [
          undefined,
          { cert: Buffer.from(chain.certPem), key: Buffer.from(chain.keyPem) },
        ]) {
          const app = await buildTestApp(https ? { https } : {})
          const headers = { 'zt-session': await login(app) }
          for (const api of ['client', 'management'] as const) {
            const contract = loadContract(api)
            const url = `/edge/${api}/v1/controllers?limit=5`
            const res = await app.inject({ method: 'GET', url, headers })
            expect(res.statusCode, res.body).toBe(200)
            const body = res.json()
            expect(body.data).toHaveLength(1)
            expect(contract.check('/controllers', 'get', 200, body), url).toEqual([])
            // The validator does read the detail: a controller without isOnline fails it.
            delete body.data[0].isOnline
            expect(contract.check('/controllers', 'get', 200, body).join()).toContain('isOnline')
            const refused = await app.inject({ method: 'GET', url })
            expect(refused.statusCode).toBe(401)
            expect(contract.check('/controllers', 'get', 401, refused.json()), url).toEqual([])
          }
        }
      })
    })
  },
)
