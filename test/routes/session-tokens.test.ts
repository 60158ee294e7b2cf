import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { hashToken } from '../../src/identities/session-service.js'
import { newId, newSecret } from '../../src/ids.js'
import { buildTestApp, forEachStore, login } from '../helpers/app.js'
import { openTestStore } from '../helpers/stores.js'

const CURRENT = '/edge/management/v1/current-api-session'

const current = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'GET', url: CURRENT, headers: { 'zt-session': token } })

forEachStore((kind) => {
  describe('session tokens', () => {
    it('name their session: `<session id>.<secret>`, and only the whole token opens it', async () => {
      const app = await buildTestApp()
      const a = await login(app)
      const b = await login(app)
      const [idA, secretA] = a.split('.') as [string, string]
      const [idB, secretB] = b.split('.') as [string, string]
      expect((await current(app, a)).json().data.id).toBe(idA)
      expect((await current(app, b)).json().data.id).toBe(idB)
      expect(secretA).toMatch(/^[\w-]{43}$/)
      const flipped = `${secretA.slice(0, -1)}${secretA.endsWith('A') ? 'B' : 'A'}`
      for (const forged of [
        `${idA}.${secretB}`, // another session's secret
        `${idB}.${secretA}`,
        `${idA}.${flipped}`,
        `${idA}.`,
        idA,
        secretA,
        `${idA}.${secretA}.${secretA}`,
        `${newId()}.${secretA}`,
      ]) {
        const res = await current(app, forged)
        expect(res.statusCode, forged).toBe(401)
        expect(res.json().error.code).toBe('UNAUTHORIZED')
      }
      expect((await current(app, a)).statusCode).toBe(200)
    })

    it('made before tokens named their session are still found by their hash, and end', async () => {
      const store = await openTestStore(kind)
      const app = await buildTestApp({ store })
      const admin = (await current(app, await login(app))).json().data.identityId as string
      const legacy = newSecret() // the old format: 43 characters, no session id
      const id = newId()
      const now = new Date()
      await store.transaction((tx) =>
        tx.sessions.insertMany([
          {
            id,
            tokenHash: hashToken(legacy),
            legacyToken: true,
            identityId: admin,
            authenticatorId: 'updb',
            ipAddress: '127.0.0.1',
            createdAt: now.toISOString(),
            updatedAt: now.toISOString(),
            lastActivityAt: now.toISOString(),
            expiresAt: new Date(now.getTime() + 600_000).toISOString(),
            hardExpiresAt: null,
          },
        ]),
      )
      const res = await current(app, legacy)
      expect(res.statusCode).toBe(200)
      expect(res.json().data).toMatchObject({ id, identityId: admin, token: legacy })
      // Its id does not open it: only its own token does.
      expect((await current(app, `${id}.${legacy}`)).statusCode).toBe(401)
      expect((await current(app, newSecret())).statusCode).toBe(401)
      const logout = await app.inject({
        method: 'DELETE',
        url: CURRENT,
        headers: { 'zt-session': legacy },
      })
      expect(logout.statusCode).toBe(200)
      expect((await current(app, legacy)).statusCode).toBe(401)
      expect(await store.repos.sessions.get(id)).toBeUndefined()
      await app.close()
      await store.close()
    })
  })
})
