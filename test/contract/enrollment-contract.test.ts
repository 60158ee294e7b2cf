import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { enroll, enrollmentSigner, USERS } from '../enrollment/fixture.js'
import { buildTestApp } from '../helpers/app.js'
import { type RunningProvider, startOidcProvider } from '../helpers/oidc-provider.js'
import { type Contract, loadContract, SPEC_AVAILABLE } from './edge-api-spec.js'

let client: Contract
let openZitiClient: Contract
let provider: RunningProvider
beforeAll(async () => {
  provider = await startOidcProvider(Object.keys(USERS), (clientId) => USERS[clientId] ?? {})
  if (!SPEC_AVAILABLE) return
  client = loadContract('client')
  openZitiClient = loadContract('client', 'openziti')
})
afterAll(() => provider.close())

describe.skipIf(!SPEC_AVAILABLE)('enrollment and the client list conform to the edge API', () => {
  it('enroll/token answers and refusals', async () => {
    const app = await buildTestApp()
    await enrollmentSigner(app, provider)
    const check = (status: number, body: unknown) =>
      expect(client.check('/enroll/token', 'post', status, body)).toEqual([])
    const ok = await enroll(app, [await provider.accessToken('alice')])
    expect(ok.statusCode).toBe(200)
    check(200, ok.json())
    const again = await enroll(app, [await provider.accessToken('alice')])
    expect(again.statusCode).toBe(409)
    check(409, again.json())
    const bad = await enroll(app, ['not-a-token'])
    expect(bad.statusCode).toBe(400)
    check(400, bad.json())
  })

  for (const fields of ['seed', 'openziti'] as const) {
    it(`the client signer list with CTRL_CLIENT_SIGNER_FIELDS=${fields}`, async () => {
      const app = await buildTestApp({ config: { clientSignerFields: fields } })
      const { manage } = await enrollmentSigner(app, provider, {
        externalAuthUrl: `${provider.issuer}/auth`,
        clientId: 'ziti-desktop',
        scopes: ['openid'],
      })
      // Listed only for enrollment: no externalAuthUrl.
      await manage('POST', '/external-jwt-signers', {
        name: 'enroll-only',
        enabled: true,
        issuer: 'https://enroll-only.example/',
        audience: 'ziti',
        jwksEndpoint: 'https://enroll-only.example/jwks',
        useExternalId: true,
        enrollToTokenEnabled: true,
      })
      const res = await app.inject({ method: 'GET', url: '/edge/client/v1/external-jwt-signers' })
      expect(res.statusCode).toBe(200)
      const contract = fields === 'seed' ? client : openZitiClient
      expect(contract.check('/external-jwt-signers', 'get', 200, res.json())).toEqual([])
      const data = res.json().data
      if (fields === 'seed') {
        expect(res.json().meta).toEqual({})
        expect(data).toHaveLength(1)
        expect(Object.keys(data[0]).sort()).toEqual(['_links', 'externalAuthUrl', 'id', 'name'])
      } else {
        // Paged by 10 as upstream, and the meta says so (a client pages on from totalCount).
        expect(res.json().meta).toEqual({
          pagination: { limit: 10, offset: 0, totalCount: 2 },
          filterableFields: ['id', 'name'],
        })
        const second = await app.inject({
          method: 'GET',
          url: '/edge/client/v1/external-jwt-signers?limit=1&offset=1',
        })
        expect(second.json().meta.pagination).toEqual({ limit: 1, offset: 1, totalCount: 2 })
        expect(second.json().data).toHaveLength(1)
        expect(data.map((s: { name: string }) => s.name).sort()).toEqual(['enroll-only', 'idp'])
        expect(data.find((s: { name: string }) => s.name === 'idp')).toMatchObject({
          clientId: 'ziti-desktop',
          scopes: ['openid'],
          audience: 'ziti-controller',
          targetToken: 'ACCESS',
          enrollToTokenEnabled: true,
          enrollToCertEnabled: false,
          openIdConfigurationUrl: `${provider.issuer}/.well-known/openid-configuration`,
        })
        expect(data.find((s: { name: string }) => s.name === 'enroll-only')).toMatchObject({
          openIdConfigurationUrl: 'https://enroll-only.example/.well-known/openid-configuration',
        })
      }
    })
  }
})
