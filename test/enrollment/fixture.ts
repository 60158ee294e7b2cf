import type { FastifyInstance, InjectOptions } from 'fastify'
import { expect } from 'vitest'
import { login } from '../helpers/app.js'
import type { RunningProvider } from '../helpers/oidc-provider.js'

/** The users of the test provider: each client's tokens carry these extra claims. */
export const USERS: Record<string, Record<string, unknown>> = {
  alice: { preferred_username: 'alice', groups: ['eng', '', 'ops'] },
  bob: { preferred_username: 'bob', groups: 'solo' },
  carol: { preferred_username: 'carol' },
  dave: { preferred_username: 'dave', groups: 5 },
  erin: { preferred_username: 'erin', groups: ['eng', 7] },
  nameless: { groups: ['eng'] },
  // Control characters (a terminal escape, a bell) are refused as in every request body.
  frank: { preferred_username: 'fr\u001b]8;;x\u0007ank' },
  gina: { preferred_username: 'gina', groups: ['eng', 'ops\u0007'] },
  // The limits of an identity update's roleAttributes: 100 of at most 255 characters.
  hank: { preferred_username: 'hank', groups: Array.from({ length: 101 }, (_, i) => `g${i}`) },
  ivy: { preferred_username: 'ivy', groups: ['eng', 'x'.repeat(256)] },
  jack: { preferred_username: 'jack', groups: Array.from({ length: 100 }, (_, i) => `g${i}`) },
  // Lone surrogates (escaped in the token's JSON), which no store keeps as they are.
  kim: { preferred_username: 'ki\ud800m' },
  liz: { preferred_username: 'liz', groups: ['eng', '\udc00'] },
}

/** An admin session and a signer for the provider with token enrollment on (or as `fields` say). */
export async function enrollmentSigner(
  app: FastifyInstance,
  provider: RunningProvider,
  fields: Record<string, unknown> = {},
) {
  const session = await login(app)
  const manage = (method: string, url: string, payload?: object) =>
    app.inject({
      method: method as 'POST', // inject types methods as a union; the tests pass text
      url: `/edge/management/v1${url}`,
      headers: { 'zt-session': session },
      ...(payload ? { payload } : {}),
    })
  const res = await manage('POST', '/external-jwt-signers', {
    name: 'idp',
    enabled: true,
    issuer: provider.issuer,
    audience: 'ziti-controller',
    jwksEndpoint: `${provider.issuer}/jwks`,
    useExternalId: true,
    claimsProperty: 'client_id',
    enrollToTokenEnabled: true,
    enrollNameClaimsSelector: 'preferred_username',
    enrollAttributeClaimsSelector: '/groups',
    ...fields,
  })
  expect(res.statusCode, res.body).toBe(201)
  return { manage, signerId: res.json().data.id as string }
}

/** `POST /edge/client/v1/enroll/token` with bearer tokens and an optional body and issuer id. */
export function enroll(app: FastifyInstance, tokens: string[], body?: object, issuerId?: string) {
  const options: InjectOptions = {
    method: 'POST',
    url: '/edge/client/v1/enroll/token',
    headers: {
      // One header line each: light-my-request sends an array as repeated headers.
      authorization: tokens.map((t) => `Bearer ${t}`) as unknown as string,
      ...(issuerId ? { 'ziti-token-issuer-id': issuerId } : {}),
    },
    ...(body ? { payload: body } : {}),
  }
  return app.inject(options)
}

export function jwtLogin(app: FastifyInstance, token: string) {
  return app.inject({
    method: 'POST',
    url: '/edge/client/v1/authenticate?method=ext-jwt',
    headers: { authorization: `Bearer ${token}` },
  })
}
