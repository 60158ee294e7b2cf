import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, forEachStore, login } from '../helpers/app.js'
import { makeCert } from '../helpers/certs.js'

const M = '/edge/management/v1'
const ROUNDS = 12

/** An app on the suite's store, an admin caller, and one JWKS signer. */
async function withSigner() {
  const app = await buildTestApp()
  const call = caller(app, await login(app))
  const created = await call('POST', `${M}/external-jwt-signers`, {
    name: 'corp',
    enabled: true,
    issuer: 'https://idp.corp.example',
    audience: 'ziti',
    jwksEndpoint: 'http://127.0.0.1:1/jwks',
  })
  expect(created.statusCode).toBe(201)
  return { call, signerId: created.json().data.id as string }
}

/**
 * Two PATCHes of one signer or policy at once, each of other fields: both are kept. On PostgreSQL
 * each update reads its row locked (FOR NO KEY UPDATE); read unlocked, each wrote back the other's
 * fields as they were, and a rotation, a disable or a second factor requirement could vanish
 * while both answered 200.
 */
forEachStore(() => {
  describe('concurrent updates of one record', () => {
    it('keeps both of two PATCHes of a signer sent at once', async () => {
      const { call, signerId } = await withSigner()
      const url = `${M}/external-jwt-signers/${signerId}`
      for (let i = 0; i < ROUNDS; i++) {
        const [a, b] = await Promise.all([
          call('PATCH', url, { audience: `aud-${i}` }),
          call('PATCH', url, { tags: { round: i } }),
        ])
        expect([a.statusCode, b.statusCode]).toEqual([200, 200])
        const data = (await call('GET', url)).json().data
        expect({ audience: data.audience, tags: data.tags }).toEqual({
          audience: `aud-${i}`,
          tags: { round: i },
        })
      }
    })

    it('keeps both of two PATCHes of an authentication policy sent at once', async () => {
      const { call, signerId } = await withSigner()
      const created = await call('POST', `${M}/auth-policies`, {
        name: 'needs-jwt',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
        secondary: { requireTotp: false },
      })
      expect(created.statusCode).toBe(201)
      const url = `${M}/auth-policies/${created.json().data.id}`
      for (let i = 0; i < ROUNDS; i++) {
        const [a, b] = await Promise.all([
          call('PATCH', url, { name: `needs-jwt-${i}` }),
          call('PATCH', url, { secondary: { requireExtJwtSigner: i % 2 ? null : signerId } }),
        ])
        expect([a.statusCode, b.statusCode]).toEqual([200, 200])
        const data = (await call('GET', url)).json().data
        expect({ name: data.name, signer: data.secondary.requireExtJwtSigner }).toEqual({
          name: `needs-jwt-${i}`,
          signer: i % 2 ? null : signerId,
        })
      }
    })

    it('gives one certificate to one of two signers created with it at once', async () => {
      const { call } = await withSigner()
      for (let i = 0; i < ROUNDS / 2; i++) {
        const { certPem } = await makeCert({ kind: 'ES256', cn: `round ${i}` })
        const body = (n: string) => ({
          name: `cert-${i}-${n}`,
          enabled: true,
          issuer: `https://idp-${i}-${n}.example`,
          audience: 'ziti',
          certPem,
          kid: `kid-${i}-${n}`,
        })
        const answers = await Promise.all([
          call('POST', `${M}/external-jwt-signers`, body('a')),
          call('POST', `${M}/external-jwt-signers`, body('b')),
        ])
        expect(answers.map((r) => r.statusCode).sort()).toEqual([201, 400])
        const refused = answers.find((r) => r.statusCode === 400)
        expect(refused?.json().error.cause.field).toBe('certPem')
      }
    })
  })
})
