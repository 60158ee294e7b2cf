import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, login } from '../../helpers/app.js'
import { makeCert } from '../../helpers/certs.js'
import { signJwt } from '../../helpers/jwt.js'
import { createTestDatabase, PG_URL } from '../../helpers/stores.js'
import { SIGNERS } from '../../helpers/token-rules.js'
import { within } from '../../helpers/within.js'

const ISSUER = 'https://idp.cluster-rules.example'

describe.skipIf(!PG_URL)('token rules across instances on one PostgreSQL', () => {
  it('a rule added through instance A refuses a token cached on instance B within 1 s', async () => {
    const dbPath = await createTestDatabase()
    const cert = await makeCert()
    const a = await buildTestApp({ storeKind: 'postgres', config: { dbPath } })
    const b = await buildTestApp({ storeKind: 'postgres', config: { dbPath } })
    const callA = caller(a, await login(a))
    const created = await callA('POST', SIGNERS, {
      name: 'idp',
      enabled: true,
      issuer: ISSUER,
      audience: 'ziti',
      certPem: cert.certPem,
      kid: 'k1',
    })
    expect(created.statusCode).toBe(201)
    const signerId = created.json().data.id as string
    const alice = (await callA('POST', '/edge/management/v1/identities', { name: 'alice' })).json()
      .data.id as string
    const jwt = await signJwt(
      cert.privateKey,
      { iss: ISSUER, aud: 'ziti', sub: alice, azp: 'grafana' },
      { kid: 'k1' },
    )
    const loginB = async () =>
      (
        await b.inject({
          method: 'POST',
          url: '/edge/client/v1/authenticate?method=ext-jwt',
          headers: { authorization: `Bearer ${jwt}` },
        })
      ).statusCode
    await within(1000, async () => expect(await loginB()).toBe(200))
    expect(await loginB()).toBe(200) // now from B's verified-token cache
    const patched = await callA('PATCH', `${SIGNERS}/${signerId}`, {
      tokenRules: { claims: [{ claim: '/azp', equals: 'ziti-tunnel' }] },
    })
    expect(patched.statusCode).toBe(200)
    await within(1000, async () => expect(await loginB()).toBe(401))
  })
})
