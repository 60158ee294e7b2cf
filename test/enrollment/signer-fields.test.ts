import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { buildTestApp, forEachStore, loopbackOnlyResolver, testConfig } from '../helpers/app.js'
import { startOidcProvider } from '../helpers/oidc-provider.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'
import { enroll, enrollmentSigner, USERS } from './fixture.js'

const BASE = {
  name: 'plain',
  enabled: true,
  issuer: 'https://idp.example',
  audience: 'ziti',
  jwksEndpoint: 'https://idp.example/jwks',
}

forEachStore(() => {
  describe('signer enrollment fields', () => {
    it('defaults, stores and returns them through create, PUT and PATCH', async () => {
      const app = await buildTestApp()
      const { manage } = await enrollmentSigner(app, {
        issuer: 'https://other.example',
        accessToken: async () => '',
        close: async () => {},
      })
      const plain = await manage('POST', '/external-jwt-signers', BASE)
      expect(plain.statusCode).toBe(201)
      const id = plain.json().data.id
      const data = (await manage('GET', `/external-jwt-signers/${id}`)).json().data
      expect(data).toMatchObject({
        enrollNameClaimsSelector: '/sub',
        enrollAttributeClaimsSelector: '',
        enrollAuthPolicyId: 'default',
      })
      expect(data).not.toHaveProperty('enrollToTokenEnabled')
      expect(data).not.toHaveProperty('enrollToCertEnabled')

      const put = await manage('PUT', `/external-jwt-signers/${id}`, {
        ...BASE,
        useExternalId: true,
        enrollToTokenEnabled: true,
        enrollToCertEnabled: true,
        enrollNameClaimsSelector: 'preferred_username',
        enrollAttributeClaimsSelector: '/ext/groups',
      })
      expect(put.statusCode, put.body).toBe(200)
      const read = async () => (await manage('GET', `/external-jwt-signers/${id}`)).json().data
      expect(await read()).toMatchObject({
        enrollToTokenEnabled: true,
        enrollToCertEnabled: true,
        enrollNameClaimsSelector: '/preferred_username',
        enrollAttributeClaimsSelector: '/ext/groups',
      })
      const patch = await manage('PATCH', `/external-jwt-signers/${id}`, {
        enrollToCertEnabled: false,
        enrollNameClaimsSelector: null,
      })
      expect(patch.statusCode).toBe(200)
      const patched = await read()
      expect(patched).toMatchObject({
        enrollToTokenEnabled: true,
        enrollNameClaimsSelector: '/sub',
      })
      expect(patched).not.toHaveProperty('enrollToCertEnabled')
    })

    it('refuses an unknown policy, a policy without the login enrolled identities make, a bad pointer and token enrollment without useExternalId', async () => {
      const app = await buildTestApp()
      const { manage } = await enrollmentSigner(app, {
        issuer: 'https://other.example',
        accessToken: async () => '',
        close: async () => {},
      })
      const noJwt = await manage('POST', '/auth-policies', {
        name: 'passwords-only',
        primary: {
          cert: { allowed: false, allowExpiredCerts: false },
          updb: {
            allowed: true,
            minPasswordLength: 12,
            requireSpecialChar: false,
            requireNumberChar: false,
            requireMixedCase: false,
            maxAttempts: 0,
            lockoutDurationMinutes: 0,
          },
          extJwt: { allowed: false, allowedSigners: [] },
        },
        secondary: { requireTotp: false, requireExtJwtSigner: null },
      })
      const policyId = noJwt.json().data.id
      const cases: [Record<string, unknown>, string][] = [
        [{ enrollAuthPolicyId: 'no-such-policy' }, 'enrollAuthPolicyId'],
        [
          { useExternalId: true, enrollToTokenEnabled: true, enrollAuthPolicyId: policyId },
          'enrollAuthPolicyId',
        ],
        [{ enrollToCertEnabled: true, enrollAuthPolicyId: policyId }, 'enrollAuthPolicyId'],
        [{ enrollToTokenEnabled: true }, 'useExternalId'],
        [{ enrollNameClaimsSelector: '/a~2b' }, 'enrollNameClaimsSelector'],
        [{ enrollAttributeClaimsSelector: '/a~' }, 'enrollAttributeClaimsSelector'],
      ]
      const created = await manage('POST', '/external-jwt-signers', BASE)
      const id = created.json().data.id
      for (const [fields, field] of cases) {
        for (const [method, url, body] of [
          [
            'POST',
            '/external-jwt-signers',
            { ...BASE, name: 'x', issuer: 'https://x.example', ...fields },
          ],
          ['PUT', `/external-jwt-signers/${id}`, { ...BASE, ...fields }],
          ['PATCH', `/external-jwt-signers/${id}`, fields],
        ] as const) {
          const res = await manage(method, url, body)
          expect(res.statusCode, `${method} ${JSON.stringify(fields)}`).toBe(400)
          expect(res.json().error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } })
        }
      }
    })
  })
})

describe.skipIf(!PG_URL)('two instances on one PostgreSQL database', () => {
  it('create exactly one identity for one subject enrolling on both at once', async () => {
    const provider = await startOidcProvider(['alice'], () => USERS.alice ?? {})
    try {
      const dbPath = await createTestDatabase()
      const build = () =>
        buildApp({ logger: false, resolver: loopbackOnlyResolver, config: testConfig({ dbPath }) })
      const one = await build()
      const two = await build()
      try {
        const { manage } = await enrollmentSigner(one, provider)
        // Both tokens first, so that the two enrollments start together.
        const first = await provider.accessToken('alice')
        const second = await provider.accessToken('alice')
        const [a, b] = await Promise.all([enroll(one, [first]), enroll(two, [second])])
        expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409])
        const loser = a.statusCode === 409 ? a : b
        expect(loser.json().error.code).toBe('ENROLLMENT_IDENTITY_ALREADY_ENROLLED')
        const list = (await manage('GET', '/identities?limit=100')).json().data
        expect(list.filter((i: { externalId: string }) => i.externalId === 'alice')).toHaveLength(1)
      } finally {
        await one.close()
        await two.close()
      }
    } finally {
      await provider.close()
    }
  })
})
