import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it, vi } from 'vitest'
import { buildApp } from '../../src/app.js'
import { caller, forEachStore, login, loopbackOnlyResolver, testConfig } from '../helpers/app.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { signJwt } from '../helpers/jwt.js'
import { freshPostgresUrl, type StoreKind } from '../helpers/stores.js'

const SIGNERS = '/edge/management/v1/external-jwt-signers'
const ISSUER = 'https://login.corp.example'

async function jwk(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256' } }
}

/** An app on a database that outlives it (a file, or this file's PostgreSQL database). */
async function durableUrl(kind: StoreKind): Promise<string> {
  if (kind === 'postgres') return freshPostgresUrl()
  return join(mkdtempSync(join(tmpdir(), 'disabled-signers-')), 'ctrl.db')
}

forEachStore((kind) => {
  describe('disabled signers (finding: disabled signers fetch their JWKS)', () => {
    it('a disabled signer fetches nothing at create, refresh timer, refresh-keys or start; enabling fetches at once; disabling closes the key set', async () => {
      const key = await jwk('k1')
      const server = await startJwksServer([key.jwk])
      const dbPath = await durableUrl(kind)
      // A tiny max age: an enabled key set would refetch many times while the test runs.
      const config = testConfig({ dbPath, dbPoolSize: 4, jwksMaxAgeMs: 100, jwksCooldownMs: 0 })
      const first = await buildApp({ logger: false, resolver: loopbackOnlyResolver, config })
      const call = caller(first, await login(first))
      const created = await call('POST', SIGNERS, {
        name: 'corp',
        enabled: false,
        issuer: ISSUER,
        audience: 'ziti',
        jwksEndpoint: server.url,
      })
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id as string
      const status = await call('GET', `${SIGNERS}/${id}/keys`)
      expect(status.json().data).toEqual({
        source: 'jwks',
        kids: [],
        lastFetchAt: null,
        lastFetchError: null,
        nextRefreshAt: null,
      })
      expect((await call('POST', `${SIGNERS}/${id}/refresh-keys`)).statusCode).toBe(200)
      // Several refresh periods pass.
      await new Promise((resolve) => setTimeout(resolve, 400))
      await first.close()

      const second = await buildApp({ logger: false, resolver: loopbackOnlyResolver, config })
      try {
        await new Promise((resolve) => setTimeout(resolve, 300))
        expect(server.hits()).toBe(0)

        const call2 = caller(second, await login(second))
        const enabled = await call2('PATCH', `${SIGNERS}/${id}`, { enabled: true })
        expect(enabled.statusCode).toBe(200)
        await vi.waitFor(() => expect(server.hits()).toBeGreaterThan(0))
        const now = new Date()
        const identity = await call2('POST', '/edge/management/v1/identities', { name: 'alice' })
        const jwt = await signJwt(
          key.privateKey,
          { iss: ISSUER, aud: 'ziti', sub: identity.json().data.id },
          { kid: 'k1', now },
        )
        const ok = await second.inject({
          method: 'POST',
          url: '/edge/client/v1/authenticate?method=ext-jwt',
          headers: { authorization: `Bearer ${jwt}` },
        })
        expect(ok.statusCode).toBe(200)

        expect((await call2('PATCH', `${SIGNERS}/${id}`, { enabled: false })).statusCode).toBe(200)
        const closed = (await call2('GET', `${SIGNERS}/${id}/keys`)).json().data
        expect(closed).toMatchObject({ kids: [], nextRefreshAt: null })
        // Let a fetch that was under way end, then nothing more arrives.
        await new Promise((resolve) => setTimeout(resolve, 200))
        const settled = server.hits()
        await new Promise((resolve) => setTimeout(resolve, 400))
        expect(server.hits()).toBe(settled)
      } finally {
        await second.close()
      }
    })
  })
})
