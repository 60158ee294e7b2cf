import { expect, onTestFinished } from 'vitest'
import type { Config } from '../../src/config.js'
import type { Store } from '../../src/store/contract.js'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { openTestStore, type StoreKind } from '../helpers/stores.js'

export const M = '/edge/management/v1'
export const C = '/edge/client/v1'
const ISSUER = 'https://idp.security.example'

let cert: Promise<TestCert> | undefined

/**
 * The real app on a store the test can read, with a certificate signer and an identity `alice`
 * who has a password; `config` turns the limits on as a test needs them.
 */
export async function loginFixture(kind: StoreKind, config: Partial<Config> = {}) {
  cert ??= makeCert()
  const key = await cert
  const store: Store = await openTestStore(kind)
  onTestFinished(() => store.close())
  const clock = testClock()
  // The store is handed in, so no second PostgreSQL database is emptied for it.
  const app = await buildTestApp({ store, storeKind: 'sqlite', clock, config })
  const admin = caller(app, await login(app))
  const signer = await admin('POST', `${M}/external-jwt-signers`, {
    name: 'corp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: key.certPem,
    kid: 'k1',
  })
  expect(signer.statusCode).toBe(201)
  const alice = (await admin('POST', `${M}/identities`, { name: 'alice' })).json().data.id as string
  const set = await admin('PUT', `${M}/identities/${alice}/password`, {
    password: 'alice-password-1',
  })
  expect(set.statusCode).toBe(200)
  const jwt = (sub: string) =>
    signJwt(key.privateKey, { iss: ISSUER, aud: 'ziti', sub }, { kid: 'k1', now: clock() })
  const jwtLogin = (tokens: string[], prefix = C, remoteAddress = '127.0.0.1') =>
    app.inject({
      method: 'POST',
      url: `${prefix}/authenticate?method=ext-jwt`,
      remoteAddress,
      // Several Authorization headers; light-my-request sends an array as repeated headers.
      headers: (tokens.length === 0
        ? {}
        : { authorization: tokens.map((t) => `Bearer ${t}`) }) as unknown as Record<string, string>,
    })
  const passwordLogin = (
    username: string,
    password: string,
    remoteAddress = '127.0.0.1',
    prefix = M,
  ) =>
    app.inject({
      method: 'POST',
      url: `${prefix}/authenticate?method=password`,
      remoteAddress,
      payload: { username, password },
    })
  return { app, store, clock, admin, alice, jwt, jwtLogin, passwordLogin }
}
