import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, forEachStore } from '../helpers/app.js'
import { type RunningProvider, startOidcProvider } from '../helpers/oidc-provider.js'
import { enroll, enrollmentSigner, jwtLogin, USERS } from './fixture.js'

let provider: RunningProvider
let other: RunningProvider

beforeAll(async () => {
  provider = await startOidcProvider(Object.keys(USERS), (clientId) => USERS[clientId] ?? {})
  other = await startOidcProvider(['alice'], () => USERS.alice ?? {})
})
afterAll(async () => {
  await provider.close()
  await other.close()
})

const token = (client: string) => provider.accessToken(client)

forEachStore(() => {
  describe('POST /edge/client/v1/enroll/token without a CSR', () => {
    it('creates the identity the token names, which then logs in with the same token', async () => {
      const app = await buildTestApp()
      const { manage, signerId } = await enrollmentSigner(app, provider)
      const jwt = await token('alice')
      const res = await enroll(app, [jwt])
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json().data.cert).toBeUndefined()
      expect(res.json().data.controllers).toHaveLength(1)

      const found = await manage('GET', '/identities?filter=externalId%20%3D%20%22alice%22')
      const [identity] = found.json().data
      expect(identity).toMatchObject({
        name: 'alice',
        externalId: 'alice',
        isAdmin: false,
        authPolicyId: 'default',
        typeId: 'Default',
        roleAttributes: ['eng', 'ops'],
      })
      const login = await jwtLogin(app, jwt)
      expect(login.statusCode).toBe(200)
      expect(login.json().data.identityId).toBe(identity.id)

      const audit = await manage('GET', '/audit-events?filter=action%20%3D%20%22enroll%22')
      expect(audit.json().data).toMatchObject([
        { actor: { id: signerId, name: 'idp' }, entityType: 'identities', entityId: identity.id },
      ])
    })

    it('takes attributes from a string claim, none from an absent one, and refuses other types, control characters, lone surrogates and more or longer attributes than an update may send', async () => {
      const app = await buildTestApp()
      const { manage } = await enrollmentSigner(app, provider)
      expect((await enroll(app, [await token('bob')])).statusCode).toBe(200)
      expect((await enroll(app, [await token('carol')])).statusCode).toBe(200)
      expect((await enroll(app, [await token('jack')])).statusCode).toBe(200)
      const list = (await manage('GET', '/identities?sort=name%20asc&limit=100')).json().data
      const attrs = (name: string) =>
        list.find((i: { name: string }) => i.name === name)?.roleAttributes
      expect(attrs('bob')).toEqual(['solo'])
      expect(attrs('carol')).toEqual([])
      expect(attrs('jack')).toHaveLength(100)

      for (const user of [
        'dave',
        'erin',
        'nameless',
        'frank',
        'gina',
        'hank',
        'ivy',
        'kim',
        'liz',
      ]) {
        const res = await enroll(app, [await token(user)])
        expect(res.statusCode, user).toBe(400)
        expect(res.json().error.code).toBe('INVALID_ENROLLMENT_TOKEN')
      }
      const after = (await manage('GET', '/identities?limit=100')).json().data
      expect(after.map((i: { name: string }) => i.name).sort()).toEqual([
        'admin',
        'bob',
        'carol',
        'jack',
      ])
    })

    it('refuses with enrollment off the same way whether or not the identity exists', async () => {
      const app = await buildTestApp()
      const { manage, signerId } = await enrollmentSigner(app, provider, {
        enrollToTokenEnabled: false,
      })
      const before = await enroll(app, [await token('alice')])
      await manage('POST', '/identities', { name: 'alice', externalId: 'alice' })
      const after = await enroll(app, [await token('alice')])
      for (const res of [before, after]) {
        expect(res.statusCode).toBe(409)
        expect(res.json().error.code).toBe('INVALID_ENROLLMENT_NOT_ALLOWED')
        expect(res.json().error.cause).toBeUndefined()
      }
      // A CSR where only token enrollment is on: refused the same way.
      await manage('PATCH', `/external-jwt-signers/${signerId}`, { enrollToTokenEnabled: true })
      const csr = await enroll(app, [await token('bob')], { clientCsr: 'not checked yet' })
      expect(csr.statusCode).toBe(409)
      expect(csr.json().error.code).toBe('INVALID_ENROLLMENT_NOT_ALLOWED')
    })

    it('refuses when the enrollment policy does not allow this signer', async () => {
      const app = await buildTestApp()
      const { manage, signerId } = await enrollmentSigner(app, provider)
      const second = await manage('POST', '/external-jwt-signers', {
        name: 'second',
        enabled: true,
        issuer: 'https://second.example',
        audience: 'x',
        jwksEndpoint: 'https://second.example/jwks',
      })
      const policy = await manage('POST', '/auth-policies', {
        name: 'only-second',
        primary: {
          cert: { allowed: false, allowExpiredCerts: false },
          updb: {
            allowed: false,
            minPasswordLength: 12,
            requireSpecialChar: false,
            requireNumberChar: false,
            requireMixedCase: false,
            maxAttempts: 0,
            lockoutDurationMinutes: 0,
          },
          extJwt: { allowed: true, allowedSigners: [second.json().data.id] },
        },
        secondary: { requireTotp: false, requireExtJwtSigner: null },
      })
      expect(policy.statusCode, policy.body).toBe(201)
      const policyId = policy.json().data.id
      const patched = await manage('PATCH', `/external-jwt-signers/${signerId}`, {
        enrollAuthPolicyId: policyId,
      })
      expect(patched.statusCode, patched.body).toBe(200)
      const res = await enroll(app, [await token('alice')])
      expect(res.statusCode).toBe(409)
      expect(res.json().error.code).toBe('INVALID_ENROLLMENT_NOT_ALLOWED')
      // The policy a signer enrolls into cannot be deleted.
      const del = await manage('DELETE', `/auth-policies/${policyId}`)
      expect(del.statusCode).toBe(409)
      expect(del.json().error).toMatchObject({
        code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
        cause: { field: 'enrollAuthPolicyId' },
      })
    })

    it('refuses an enrolled externalId and a taken name, creating nothing', async () => {
      const app = await buildTestApp()
      const { manage } = await enrollmentSigner(app, provider)
      expect((await enroll(app, [await token('alice')])).statusCode).toBe(200)
      const again = await enroll(app, [await token('alice')])
      expect(again.statusCode).toBe(409)
      expect(again.json().error.code).toBe('ENROLLMENT_IDENTITY_ALREADY_ENROLLED')

      await manage('POST', '/identities', { name: 'bob' })
      const taken = await enroll(app, [await token('bob')])
      expect(taken.statusCode).toBe(409)
      expect(taken.json().error.cause.field).toBe('name')
      const list = (await manage('GET', '/identities?limit=100')).json().data
      expect(list.filter((i: { externalId: string }) => i.externalId === 'bob')).toEqual([])
    })

    it('with ziti-token-issuer-id, refuses a token of another issuer and takes the first valid token', async () => {
      const app = await buildTestApp()
      const { signerId } = await enrollmentSigner(app, provider)
      const foreign = await other.accessToken('alice')
      const res = await enroll(app, [foreign], undefined, signerId)
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('INVALID_ENROLLMENT_TOKEN')
      const unknown = await enroll(app, [await token('alice')], undefined, 'no-such-signer')
      expect(unknown.statusCode).toBe(400)

      const both = await enroll(app, [foreign, await token('alice')], undefined, signerId)
      expect(both.statusCode, both.body).toBe(200)
      expect((await enroll(app, [])).json().error.code).toBe('INVALID_ENROLLMENT_TOKEN')
    })
  })
})
