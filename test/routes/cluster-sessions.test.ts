import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { makeCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { cutListenersThen } from '../helpers/listeners.js'
import { freshPostgresUrl, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// Every instance keeps the sessions it has seen in memory. A session ended through another
// instance is forgotten when that instance's notification arrives; while the notification
// connection is down, sessions are read from the database on every request.

const CURRENT = '/edge/management/v1/current-api-session'
const I = '/edge/management/v1/identities'

const current = async (app: FastifyInstance, token: string) =>
  (await app.inject({ method: 'GET', url: CURRENT, headers: { 'zt-session': token } })).statusCode

async function twoInstances(
  config: { maxSessionsPerIdentity?: number; sessionTimeoutMs?: number } = {},
  clock?: () => Date,
) {
  const url = await freshPostgresUrl()
  const a = await buildTestApp({ config: { dbPath: url, ...config }, ...(clock ? { clock } : {}) })
  const b = await buildTestApp({ config: { dbPath: url, ...config }, ...(clock ? { clock } : {}) })
  return { url, a, b }
}

describe.skipIf(!PG_URL)('sessions kept on two instances of one PostgreSQL database', () => {
  it('a session used on A and ended through B is refused by A within a second', async () => {
    const { a, b } = await twoInstances()
    const token = await login(a)
    expect(await current(a, token)).toBe(200) // kept on A
    expect(await current(b, token)).toBe(200)
    const logout = await b.inject({
      method: 'DELETE',
      url: CURRENT,
      headers: { 'zt-session': token },
    })
    expect(logout.statusCode).toBe(200)
    expect(await current(b, token)).toBe(401)
    await within(1000, async () => expect(await current(a, token)).toBe(401))
  })

  it('sessions ended through B by the cap, a password change or disabling are refused by A within a second', async () => {
    const { a, b } = await twoInstances({ maxSessionsPerIdentity: 2 })
    const admin = caller(b, await login(b))
    const id = (await admin('POST', I, { name: 'carol' })).json().data.id
    await admin('PUT', `${I}/${id}/password`, { password: 'carol-password-1' })

    // The cap: two more logins through B end the session A keeps.
    const first = await login(a, 'carol', 'carol-password-1')
    expect(await current(a, first)).toBe(200)
    await login(b, 'carol', 'carol-password-1')
    await login(b, 'carol', 'carol-password-1')
    await within(1000, async () => expect(await current(a, first)).toBe(401))

    // A password change through B ends every other session of the identity.
    const second = await login(a, 'carol', 'carol-password-1')
    expect(await current(a, second)).toBe(200)
    await admin('PUT', `${I}/${id}/password`, { password: 'carol-password-2' })
    await within(1000, async () => expect(await current(a, second)).toBe(401))

    // Disabling the identity through B.
    const third = await login(a, 'carol', 'carol-password-2')
    expect(await current(a, third)).toBe(200)
    await admin('PATCH', `${I}/${id}`, { disabled: true })
    await within(1000, async () => expect(await current(a, third)).toBe(401))
  })

  it('reads sessions from the database while notifications are down: one deleted unannounced is refused', async () => {
    const { url, a } = await twoInstances()
    const token = await login(a)
    expect(await current(a, token)).toBe(200)
    const cut = await cutListenersThen(url, [
      ['DELETE FROM api_sessions WHERE id = $1', [token.split('.')[0]]],
    ])
    expect(cut).toBe(2)
    await within(1000, async () => expect(await current(a, token)).toBe(401))
  })

  it('refuses a session deleted where no notification names it (as another instance purges expired ones) at its next touch, never reviving it', async () => {
    const clock = testClock()
    const { url, a, b } = await twoInstances({}, clock)
    const token = await login(a)
    expect(await current(a, token)).toBe(200) // kept on A
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    try {
      // B's purge of expired sessions announces no id: A hears nothing of this one.
      await db.query('DELETE FROM api_sessions WHERE id = $1', [token.split('.')[0]])
    } finally {
      await db.end()
    }
    clock.advance(1100) // A's next use slides the session's expiry
    expect(await current(a, token)).toBe(401)
    expect(await current(a, token)).toBe(401)
    expect(await current(b, token)).toBe(401)
  })

  it("slides a session's expiry through whichever instance is used, and keeps it alive on both", async () => {
    const { a, b } = await twoInstances({ sessionTimeoutMs: 2000 })
    const token = await login(a)
    expect(await current(a, token)).toBe(200)
    expect(await current(b, token)).toBe(200)
    // Used through B only for a while; A's kept copy grows old but the store has the newer expiry.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 1100))
      expect(await current(b, token)).toBe(200)
    }
    expect(await current(a, token)).toBe(200)
  })

  it("keeps the identities it read for JWT logins through other instances' logins, and forgets one changed through B", async () => {
    const { url, a, b } = await twoInstances()
    const adminB = caller(b, await login(b))
    const cert = await makeCert()
    const issuer = 'https://idp.cluster.example'
    await adminB('POST', '/edge/management/v1/external-jwt-signers', {
      name: 'cluster idp',
      enabled: true,
      issuer,
      audience: 'ziti',
      certPem: cert.certPem,
      kid: 'k1',
    })
    const alice = (await adminB('POST', I, { name: 'alice' })).json().data.id as string
    const bob = (await adminB('POST', I, { name: 'bob' })).json().data.id as string
    await adminB('PUT', `${I}/${bob}/password`, { password: 'bob-password-1' })
    /** The login's status, and its error code when refused. */
    const jwtLogin = async () => {
      const res = await a.inject({
        method: 'POST',
        url: '/edge/client/v1/authenticate?method=ext-jwt',
        headers: {
          authorization: `Bearer ${await signJwt(cert.privateKey, { iss: issuer, aud: 'ziti', sub: alice }, { kid: 'k1' })}`,
        },
      })
      if (res.statusCode === 200) return '200'
      // Every refused JWT login carries the primary challenge (issue 4), wherever it was refused.
      expect(res.headers['www-authenticate']).toContain('realm="openziti-primary-ext-jwt"')
      return `${res.statusCode} ${res.json().error.code}`
    }
    await within(1000, async () => expect(await jwtLogin()).toBe('200')) // A has heard of the signer

    // Disabled behind every instance's back (no notification): A goes on with the record it keeps
    // (the JWT is accepted for her), and only the store, which reads her as she is when it stores
    // the login, refuses it (answered as a disabled identity known as such is: 401 UNAUTHORIZED
    // with the challenge, issue 4).
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    try {
      await db.query('UPDATE identities SET disabled = true WHERE id = $1', [alice])
    } finally {
      await db.end()
    }
    // Logins through B are announced to A (its identity list shows bob's new session) and leave
    // what A keeps of alice alone: before, every notification made A read its identities again.
    const adminA = caller(a, await login(a))
    const bobOnA = async () =>
      (await adminA('GET', `${I}?filter=${encodeURIComponent('name = "bob"')}`)).json().data[0]
    expect((await bobOnA()).hasApiSession).toBe(false)
    await login(b, 'bob', 'bob-password-1')
    await within(1000, async () => expect((await bobOnA()).hasApiSession).toBe(true))
    expect(await jwtLogin()).toBe('401 UNAUTHORIZED')

    // A change of alice announced through B: A reads her again, disabled.
    await adminB('PATCH', `${I}/${alice}`, { name: 'alice-2' })
    await within(1000, async () => expect(await jwtLogin()).toBe('401 UNAUTHORIZED'))
  })
})
