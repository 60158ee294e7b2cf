import { describe, expect, it } from 'vitest'
import { SessionService } from '../../src/identities/session-service.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  buildTestApp,
  forEachStore,
  login,
  testClock,
} from '../helpers/app.js'
import { openTestStore } from '../helpers/stores.js'

const AUTH = '/edge/management/v1/authenticate?method=password'
const CURRENT = '/edge/management/v1/current-api-session'
const SIGNERS = '/edge/management/v1/external-jwt-signers'

forEachStore(() => {
  describe('password login and API sessions', () => {
    it('answers 200 with the session in data and the token in zt-session', async () => {
      const app = await buildTestApp()
      const res = await app.inject({
        method: 'POST',
        url: AUTH,
        payload: { username: ADMIN_USER, password: ADMIN_PASSWORD },
      })
      expect(res.statusCode).toBe(200)
      const { data, meta } = res.json()
      expect(meta).toEqual({})
      const token = res.headers['zt-session']
      expect(typeof token).toBe('string')
      expect(Buffer.from(token as string, 'base64url').length).toBeGreaterThanOrEqual(16)
      expect(data).toMatchObject({
        token,
        identity: { name: ADMIN_USER, id: data.identityId },
        expirationSeconds: 1800,
        authQueries: [],
        authenticatorId: 'updb',
      })
      expect(typeof data.id).toBe('string')
      expect(Date.parse(data.expiresAt)).toBeGreaterThan(Date.now())
      // The answer holds the token: no cache (a proxy's, a browser's) may keep it.
      expect(res.headers['cache-control']).toBe('no-store')
    })

    it('gives the same 401 for a wrong username and a wrong password', async () => {
      const app = await buildTestApp()
      const wrongUser = await app.inject({
        method: 'POST',
        url: AUTH,
        payload: { username: 'nobody', password: ADMIN_PASSWORD },
      })
      const wrongPass = await app.inject({
        method: 'POST',
        url: AUTH,
        payload: { username: ADMIN_USER, password: 'wrong-password-1' },
      })
      expect(wrongUser.statusCode).toBe(401)
      expect(wrongPass.statusCode).toBe(401)
      expect(wrongUser.json().error.code).toBe(wrongPass.json().error.code)
      expect(wrongUser.json().error.message).toBe(wrongPass.json().error.message)
      expect(wrongUser.headers['zt-session']).toBeUndefined()
    })

    it('refuses unknown methods and missing credentials with 400', async () => {
      const app = await buildTestApp()
      const method = await app.inject({
        method: 'POST',
        url: '/edge/management/v1/authenticate?method=magic',
        payload: {},
      })
      expect(method.statusCode).toBe(400)
      expect(method.json().error.code).toBe('INVALID_AUTH_METHOD')
      const missing = await app.inject({
        method: 'POST',
        url: AUTH,
        payload: { username: ADMIN_USER },
      })
      expect(missing.statusCode).toBe(400)
      expect(missing.json().error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'password' },
      })
    })

    it('reads and ends the current session; an ended session is 401', async () => {
      const app = await buildTestApp()
      const token = await login(app)
      const cur = await app.inject({
        method: 'GET',
        url: CURRENT,
        headers: { 'zt-session': token },
      })
      expect(cur.statusCode).toBe(200)
      expect(cur.json().data.token).toBe(token)
      expect(cur.headers['cache-control']).toBe('no-store')
      const del = await app.inject({
        method: 'DELETE',
        url: CURRENT,
        headers: { 'zt-session': token },
      })
      expect(del.statusCode).toBe(200)
      expect(del.json()).toEqual({ data: {}, meta: {} })
      const after = await app.inject({
        method: 'GET',
        url: SIGNERS,
        headers: { 'zt-session': token },
      })
      expect(after.statusCode).toBe(401)
      expect(after.json().error.code).toBe('UNAUTHORIZED')
    })

    it('a logout that overlaps requests of the same session still ends it for every later one', async () => {
      const app = await buildTestApp()
      const token = await login(app)
      const headers = { 'zt-session': token }
      const inFlight = Array.from({ length: 20 }, () =>
        app.inject({ method: 'GET', url: SIGNERS, headers }),
      )
      const logout = app.inject({ method: 'DELETE', url: CURRENT, headers })
      const more = Array.from({ length: 20 }, () =>
        app.inject({ method: 'GET', url: SIGNERS, headers }),
      )
      await Promise.all([...inFlight, logout, ...more])
      expect((await logout).statusCode).toBe(200)
      for (let i = 0; i < 3; i++) {
        const after = await app.inject({ method: 'GET', url: CURRENT, headers })
        expect(after.statusCode).toBe(401)
        expect(after.json().error.code).toBe('UNAUTHORIZED')
      }
    })

    it('guards every management route: no session, a bogus one and a non-admin all get 401', async () => {
      const app = await buildTestApp()
      for (const headers of [{}, { 'zt-session': 'bogus' }]) {
        for (const [method, url] of [
          ['GET', SIGNERS],
          ['POST', SIGNERS],
          ['GET', `${SIGNERS}/x`],
          ['PUT', `${SIGNERS}/x`],
          ['PATCH', `${SIGNERS}/x`],
          ['DELETE', `${SIGNERS}/x`],
          ['GET', '/edge/management/v1/ext-jwt-signers'],
          ['GET', CURRENT],
        ] as const) {
          const res = await app.inject({ method, url, headers, payload: {} })
          expect(res.statusCode, `${method} ${url}`).toBe(401)
          expect(res.json().error.code).toBe('UNAUTHORIZED')
          // As OpenZiti's controller answers (its Test_Legacy_AuthHeaders): no session names both
          // of its session kinds; a session it does not know, the zt-session one only.
          expect(res.headers['www-authenticate']).toBe(
            'zt-session' in headers
              ? 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"'
              : 'zt-session realm="zt-session" error="missing" error_description="no matching token was provided",' +
                  'Bearer realm="openziti-oidc" error="missing" error_description="no matching token was provided"',
          )
        }
      }
    })

    it('purges expired sessions from the store', async () => {
      const clock = testClock()
      const store = await openTestStore('sqlite')
      const app = await buildTestApp({ clock, store, config: { sessionTimeoutMs: 60_000 } })
      await login(app)
      await login(app)
      const sessions = new SessionService({
        store,
        identity: (id) => store.repos.identities.get(id),
        clock,
        timeoutMs: 60_000,
      })
      expect(await sessions.purgeExpired()).toBe(0)
      clock.advance(60_001)
      expect(await sessions.purgeExpired()).toBe(2)
      expect(await store.repos.sessions.count()).toBe(0)
      await store.close()
    })

    it('expires idle sessions and slides the expiry with activity', async () => {
      const clock = testClock()
      const app = await buildTestApp({ clock, config: { sessionTimeoutMs: 60_000 } })
      const token = await login(app)
      const headers = { 'zt-session': token }
      clock.advance(50_000)
      expect((await app.inject({ method: 'GET', url: SIGNERS, headers })).statusCode).toBe(200)
      clock.advance(50_000) // 100 s after login, 50 s after the last call
      const cur = await app.inject({ method: 'GET', url: CURRENT, headers })
      expect(cur.statusCode).toBe(200)
      expect(cur.json().data.expirationSeconds).toBe(60)
      clock.advance(60_001)
      expect((await app.inject({ method: 'GET', url: SIGNERS, headers })).statusCode).toBe(401)
    })

    it("tells the session's expiry on every answer to it, refusals included, as OpenZiti does", async () => {
      const clock = testClock()
      const app = await buildTestApp({ clock, config: { sessionTimeoutMs: 60_000 } })
      const token = await login(app)
      const headers = { 'zt-session': token }
      clock.advance(20_000)
      // The first of these requests slides the expiry (20 s of idle time later): 60 s from now.
      const expiry = {
        'expiration-seconds': '60',
        'expires-at': new Date(clock().getTime() + 60_000).toISOString(),
      }
      for (const [method, url, status] of [
        ['GET', SIGNERS, 200],
        ['GET', `${SIGNERS}/no-such-signer`, 404],
        ['GET', '/edge/client/v1/current-identity', 200],
        ['GET', '/edge/management/v1/identities', 200],
        ['POST', SIGNERS, 400],
      ] as const) {
        const res = await app.inject({ method, url, headers, payload: {} })
        expect(res.statusCode, `${method} ${url}`).toBe(status)
        expect(res.headers, `${method} ${url}`).toMatchObject(expiry)
      }
      // No session, no such headers (the unauthenticated client list, a refused call).
      const open = await app.inject({ method: 'GET', url: '/edge/client/v1/external-jwt-signers' })
      const refused = await app.inject({ method: 'GET', url: SIGNERS })
      for (const res of [open, refused]) {
        expect(res.headers['expiration-seconds']).toBeUndefined()
        expect(res.headers['expires-at']).toBeUndefined()
      }
    })

    it("shows the caller's own identity as the identity list shows it (current-identity)", async () => {
      const app = await buildTestApp()
      const token = await login(app)
      const headers = { 'zt-session': token }
      for (const api of ['client', 'management']) {
        const own = await app.inject({
          method: 'GET',
          url: `/edge/${api}/v1/current-identity`,
          headers,
        })
        expect(own.statusCode).toBe(200)
        const { id } = own.json().data
        const listed = await app.inject({
          method: 'GET',
          url: `/edge/management/v1/identities/${id}`,
          headers,
        })
        expect(own.json()).toEqual(listed.json())
        expect(own.json().data).toMatchObject({
          name: ADMIN_USER,
          isAdmin: true,
          hasApiSession: true,
          authPolicy: { id: 'default', name: 'Default' },
          type: { id: 'Default', name: 'Default' },
          _links: { self: { href: `./identities/${id}` } },
        })
      }
    })
  })
})
