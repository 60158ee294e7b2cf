import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { openStore } from '../../src/store/open-store.js'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'

const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
const SIGNERS = '/edge/management/v1/external-jwt-signers'
const ISSUER = 'https://idp.corp.example'
const dir = mkdtempSync(join(tmpdir(), 'ctrl-rotation-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let first: TestCert
let second: TestCert
beforeAll(async () => {
  ;[first, second] = await Promise.all([makeCert(), makeCert()])
})

/**
 * Another instance rotates a certificate signer's certificate and this instance does not hear of
 * it (its notifications were down); then a change through this instance (a tag) commits on top.
 * The key this instance verifies with must be the new certificate's: it kept the old one when it
 * judged by the version its update had read (the rotated one) instead of the one it held.
 * Simulated on one SQLite file: a second connection writes the rotation, which no instance hears.
 */
describe('a certificate rotated unheard, then a change through this instance', () => {
  it('verifies with the rotated certificate, and no longer with the old one', async () => {
    const db = join(dir, 'controller.db')
    const app = await buildTestApp({ storeKind: 'sqlite', config: { dbPath: db } })
    const call = caller(app, await login(app))
    const created = await call('POST', SIGNERS, {
      name: 'corp',
      enabled: true,
      issuer: ISSUER,
      audience: 'ziti',
      certPem: first.certPem,
      kid: 'k1',
    })
    expect(created.statusCode).toBe(201)
    const signerId = created.json().data.id as string
    const identity = await call('POST', '/edge/management/v1/identities', { name: 'alice' })
    const sub = identity.json().data.id as string
    const tryLogin = async (cert: TestCert, kid: string) =>
      (
        await app.inject({
          method: 'POST',
          url: LOGIN,
          headers: {
            authorization: `Bearer ${await signJwt(cert.privateKey, { iss: ISSUER, aud: 'ziti', sub }, { kid })}`,
          },
        })
      ).statusCode
    expect(await tryLogin(first, 'k1')).toBe(200)

    const other = await openStore(
      { db, poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 5000 },
      { info: () => {}, warn: () => {} },
      async () => {},
    )
    onTestFinished(() => other.close())
    const stored = await other.repos.signers.get(signerId)
    if (!stored) throw new Error('the signer is stored')
    await other.transaction(async (tx) => {
      await tx.signers.update({
        ...stored,
        certPem: second.certPem,
        kid: 'k2',
        updatedAt: new Date(Date.parse(stored.updatedAt) + 1000).toISOString(),
      })
    })

    const tagged = await call('PATCH', `${SIGNERS}/${signerId}`, { tags: { team: 'x' } })
    expect(tagged.statusCode).toBe(200)
    expect(await tryLogin(second, 'k2')).toBe(200)
    expect(await tryLogin(first, 'k2')).toBe(401)
    expect(await tryLogin(first, 'k1')).toBe(401)
  })
})
