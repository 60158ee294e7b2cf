import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it, onTestFinished } from 'vitest'
import { NO_AUDIT_CONTEXT } from '../../src/audit/audit-service.js'
import { admitsKeptAdmin } from '../../src/routes/auth-hooks.js'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { cutListenersThen } from '../helpers/listeners.js'
import { testServices } from '../helpers/services.js'
import { listedSigner } from '../helpers/signers.js'
import { staleable } from '../helpers/staleable.js'
import { freshPostgresUrl, openTestStore, PG_URL, STORES } from '../helpers/stores.js'
import { within } from '../helpers/within.js'
import { type Answer, httpAnswer as get, listen } from '../http/raw-http.js'
import { buildMeteredApp } from '../metrics/scrape.js'

// The default pages of the admin lists (signers under both paths, identities) are answered before
// Fastify once kept, for a session the auth hook would admit as things stand in memory
// (src/routes/lanes.ts, admitsKeptAdmin). Over real HTTP (inject never reaches a lane), these check
// that every answer, refusals included, is what the route gives, and that every change shows.

const M = '/edge/management/v1/external-jwt-signers'
const SHORT = '/edge/management/v1/ext-jwt-signers'
const I = '/edge/management/v1/identities'
const P = '/edge/management/v1/auth-policies'
const LISTS = [M, SHORT, I]

/**
 * Serves the app on a real listener and notes the URL of every request answered before Fastify:
 * Fastify answers none synchronously (its auth hooks are asynchronous), a lane only so.
 */
async function served(app: FastifyInstance) {
  const byLane: string[] = []
  const [listener] = app.server.listeners('request') as ((
    req: IncomingMessage,
    res: ServerResponse,
  ) => void)[]
  if (!listener) throw new Error('the server has no request listener')
  app.server.removeAllListeners('request')
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    listener(req, res)
    if (res.writableEnded) byLane.push(req.url ?? '')
  })
  const port = await listen(app)
  const admin = await login(app)
  return { port, admin, call: caller(app, admin), byLane }
}

const names = (a: Answer) => (JSON.parse(a.body).data as { name: string }[]).map((s) => s.name)

/** An identity with a password, and its session (by password login). */
async function userSession(
  app: FastifyInstance,
  call: ReturnType<typeof caller>,
  name: string,
  fields: object,
): Promise<{ id: string; token: string }> {
  const id = (await call('POST', I, { name, ...fields })).json().data.id as string
  await call('PUT', `${I}/${id}/password`, { password: `${name}-password-1` })
  return { id, token: await login(app, name, `${name}-password-1`) }
}

describe.each(STORES)('the admin list lanes on %s', (storeKind) => {
  it('answer each kept default page exactly as its route does: status, headers, body and 304', async () => {
    // A clock of the test's: the lane admits a session only within a second of its last recorded
    // activity, which a slow machine's wall clock could pass between two requests.
    const clock = testClock()
    const app = await buildTestApp({ storeKind, clock })
    const { port, admin, call, byLane } = await served(app)
    for (const n of ['one', 'two']) await call('POST', M, listedSigner(n))
    const headers = { 'zt-session': admin }
    // On PostgreSQL the instance's own changes (the login, the creates) come back as notifications
    // and drop what it keeps; on a loaded machine one may land between the requests below. Wait
    // until every list's page is kept through a second request, then count from there.
    await within(2000, async () => {
      byLane.length = 0
      for (const list of LISTS) await get(port, list, headers)
      await new Promise((r) => setTimeout(r, 50)) // time for a notification on its way to land
      for (const list of LISTS) await get(port, list, headers)
      expect(byLane).toEqual(LISTS)
    })
    byLane.length = 0
    for (const list of LISTS) {
      const fromLane = await get(port, list, headers) // kept since the wait above
      // `?` with nothing after it: the same page, always through the route.
      const fromRoute = await get(port, `${list}?`, headers)
      const again = await get(port, list, headers)
      expect(fromRoute.status).toBe(200)
      // The session's expiry, as on every answer to a session (OpenZiti's headers).
      expect(fromRoute.headers['expiration-seconds']).toMatch(/^\d+$/)
      expect(fromRoute.headers['expires-at']).toBeDefined()
      expect(fromLane).toEqual(fromRoute)
      expect(again).toEqual(fromRoute)
      const etag = fromRoute.headers.etag as string
      const notModified = await get(port, list, { ...headers, 'if-none-match': etag })
      expect(notModified.status).toBe(304)
      expect(notModified.body).toBe('')
      expect(notModified).toEqual(
        await get(port, `${list}?`, { ...headers, 'if-none-match': etag }),
      )
      const stale = await get(port, list, { ...headers, 'if-none-match': '"not-it"' })
      expect(stale).toEqual(fromRoute)
    }
    // Each list's first, third, fourth and sixth requests came through its lane.
    for (const list of LISTS) expect(byLane.filter((u) => u === list).length).toBe(4)
    expect(byLane.every((u) => LISTS.includes(u))).toBe(true)

    // A second after the session's activity was last written, the route answers (and writes it
    // again); then the lane does once more.
    clock.advance(999)
    expect(await get(port, M, headers)).toMatchObject({ status: 200 })
    expect(byLane).toHaveLength(13)
    clock.advance(1)
    const touched = await get(port, M, headers)
    expect(byLane).toHaveLength(13)
    expect(await get(port, M, headers)).toEqual(touched)
    expect(byLane).toHaveLength(14)

    // A query that only looks like the default page's key is the route's, and refused.
    for (const query of ['limit=undefined', 'offset=undefined', 'filter=undefined', 'sort=null']) {
      const refused = await get(port, `${M}?${query}`, headers)
      expect(refused.status, query).toBe(400)
    }
    expect(names(await get(port, M, headers))).toEqual(['one', 'two'])
    expect(names(await get(port, I, headers))).toEqual(['admin'])
  })

  it('refuse exactly as the route does: no session, an unknown one, a non-admin, a secondary factor unmet', async () => {
    const app = await buildTestApp({ storeKind, clock: testClock() })
    const { port, admin, call, byLane } = await served(app)
    const signer = (await call('POST', M, listedSigner('mfa'))).json().data.id
    const policy = (
      await call('POST', P, {
        name: 'needs-jwt',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
        secondary: { requireExtJwtSigner: signer },
      })
    ).json().data.id
    const plain = await userSession(app, call, 'plain', {})
    const strict = await userSession(app, call, 'strict', { isAdmin: true, authPolicyId: policy })
    for (const list of LISTS) await get(port, list, { 'zt-session': admin }) // kept
    const cases: Record<string, string>[] = [
      {},
      { 'zt-session': '' },
      { 'zt-session': 'not-a-session' },
      { 'zt-session': `${admin}x` },
      { 'zt-session': plain.token },
      { 'zt-session': strict.token },
    ]
    for (const list of LISTS) {
      for (const headers of cases) {
        // Twice: the second time everything the first read is kept.
        for (let i = 0; i < 2; i++) {
          const answer = await get(port, list, headers)
          expect(answer.status, `${list} ${JSON.stringify(headers)}`).toBe(401)
          expect(JSON.parse(answer.body).error.code).toBe('UNAUTHORIZED')
          const viaRoute = await get(port, `${list}?`, headers)
          const { body: _a, ...answerHeaders } = answer
          const { body: _b, ...routeHeaders } = viaRoute
          expect(answerHeaders).toEqual(routeHeaders)
          expect(JSON.parse(answer.body).error.cause).toEqual(JSON.parse(viaRoute.body).error.cause)
        }
      }
    }
    const challenged = await get(port, M, { 'zt-session': strict.token })
    expect(challenged.headers['www-authenticate']).toContain('openziti-secondary-ext-jwt')
    expect(byLane).toEqual([])
  })

  it('refuse in the very next request a session logged out, an identity demoted or disabled, a policy now asking a factor', async () => {
    const app = await buildTestApp({ storeKind, clock: testClock() })
    const { port, call, byLane } = await served(app)
    const signer = (await call('POST', M, listedSigner('mfa'))).json().data.id
    const second = async () => {
      const user = await userSession(app, call, `second-${Date.now()}`, { isAdmin: true })
      const headers = { 'zt-session': user.token }
      for (const list of LISTS) {
        expect((await get(port, list, headers)).status).toBe(200)
        const before = byLane.length
        expect((await get(port, list, headers)).status).toBe(200)
        expect(byLane.length).toBe(before + 1) // through the lane
      }
      return { ...user, headers }
    }
    const refused = async (headers: Record<string, string>) => {
      for (const list of LISTS) expect((await get(port, list, headers)).status, list).toBe(401)
    }

    const loggedOut = await second()
    const ended = await get(
      port,
      '/edge/management/v1/current-api-session',
      loggedOut.headers,
      'DELETE',
    )
    expect(ended.status).toBe(200)
    await refused(loggedOut.headers)

    const demoted = await second()
    await call('PATCH', `${I}/${demoted.id}`, { isAdmin: false })
    await refused(demoted.headers)

    const disabled = await second()
    await call('PATCH', `${I}/${disabled.id}`, { disabled: true })
    await refused(disabled.headers)

    const factor = await second()
    const policy = (
      await call('POST', P, {
        name: 'later',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
        secondary: {},
      })
    ).json().data.id
    await call('PATCH', `${I}/${factor.id}`, { authPolicyId: policy })
    for (const list of LISTS) expect((await get(port, list, factor.headers)).status).toBe(200)
    await call('PATCH', `${P}/${policy}`, { secondary: { requireExtJwtSigner: signer } })
    await refused(factor.headers)
  })

  it('show every change in the very next response, and are counted in the metrics as the route is', async () => {
    const s = await buildMeteredApp({ storeKind, clock: testClock() })
    const { port, admin, call, byLane } = await served(s.app)
    const headers = { 'zt-session': admin }
    const list = async (path: string) => {
      const first = await get(port, path, headers)
      expect(await get(port, path, headers)).toEqual(first)
      return names(first)
    }
    const id = (await call('POST', M, listedSigner('alpha'))).json().data.id
    expect(await list(M)).toEqual(['alpha'])
    await call('PATCH', `${M}/${id}`, { name: 'beta' })
    expect(names(await get(port, M, headers))).toEqual(['beta'])
    expect(names(await get(port, SHORT, headers))).toEqual(['beta'])
    await call('DELETE', `${M}/${id}`)
    expect(names(await get(port, M, headers))).toEqual([])
    expect(await list(I)).toEqual(['admin'])
    const user = (await call('POST', I, { name: 'user' })).json().data.id
    expect(names(await get(port, I, headers))).toEqual(['admin', 'user'])
    await call('PATCH', `${I}/${user}`, { name: 'renamed' })
    expect(names(await get(port, I, headers))).toEqual(['admin', 'renamed'])
    expect(byLane.length).toBeGreaterThan(0)

    // Every request counted once under its route's pattern, whichever way it was answered.
    const scraped = await s.scrape()
    for (const [path, requests] of [
      [M, 4],
      [SHORT, 1],
      [I, 4],
    ] as const) {
      const counted = { method: 'GET', route: path, status: '200' }
      expect(scraped.value('ctrl_http_requests_total', counted), path).toBe(requests)
    }
  })
})

describe('admitsKeptAdmin', () => {
  it('admits only a kept live session of an enabled admin, no sliding expiry due, whose kept policy asks no factor', async () => {
    const clock = testClock()
    const real = await openTestStore('sqlite')
    onTestFinished(() => real.close())
    const { store, flags } = staleable(real)
    const services = await testServices(store, clock, { sessionTimeoutMs: 60_000 })
    const { auth, identities, policies, sessions } = services
    // Another admin, so that this one may be demoted (the last one may not).
    await identities.create({ name: 'other', isAdmin: true }, NO_AUDIT_CONTEXT)
    const admin = await identities.create({ name: 'boss', isAdmin: true }, NO_AUDIT_CONTEXT)
    const { token } = await sessions.open(admin, 'updb', '127.0.0.1')
    const headers = { 'zt-session': token }
    /** What the route's auth hook reads: the session, its identity, the identity's policy. */
    const readAsTheHookDoes = async () => {
      const resolved = await sessions.resolve(token)
      if (resolved) await auth.policyOf(resolved.identity)
      return resolved
    }

    /** Whether the lane may answer; then the session's expiry headers, as the hook adds them. */
    const admitted = (h: Record<string, string>) => admitsKeptAdmin(auth, h) !== undefined

    expect(admitted(headers)).toBe(false) // nothing kept yet
    expect(await readAsTheHookDoes()).toBeDefined()
    expect(admitsKeptAdmin(auth, headers)).toEqual({
      'expiration-seconds': '60',
      'expires-at': new Date(clock().getTime() + 60_000).toISOString(),
    })
    expect(admitted({})).toBe(false)
    expect(admitted({ 'zt-session': `${token}x` })).toBe(false)
    expect(admitted({ 'zt-session': ['a', 'b'] as unknown as string })).toBe(false)

    // A second after the last write of its activity, the hook would write it again: not here.
    clock.advance(999)
    expect(admitted(headers)).toBe(true)
    clock.advance(1)
    expect(admitted(headers)).toBe(false)
    await readAsTheHookDoes()
    expect(admitted(headers)).toBe(true)

    // A policy change drops what was kept; a policy asking a factor is never admitted here.
    const signer = await services.signers.create(listedSigner('mfa'))
    const policy = await policies.create(
      {
        name: 'strict',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: true } },
        secondary: { requireExtJwtSigner: signer.id },
      },
      NO_AUDIT_CONTEXT,
    )
    await identities.patch(admin.id, { authPolicyId: policy.id }, NO_AUDIT_CONTEXT)
    expect(admitted(headers)).toBe(false)
    await readAsTheHookDoes()
    expect(admitted(headers)).toBe(false)
    await policies.patch(policy.id, { secondary: { requireExtJwtSigner: null } }, NO_AUDIT_CONTEXT)
    expect(admitted(headers)).toBe(false)
    await readAsTheHookDoes()
    expect(admitted(headers)).toBe(true)

    await identities.patch(admin.id, { isAdmin: false }, NO_AUDIT_CONTEXT)
    await readAsTheHookDoes()
    expect(admitted(headers)).toBe(false)
    await identities.patch(admin.id, { isAdmin: true }, NO_AUDIT_CONTEXT)
    await readAsTheHookDoes()
    expect(admitted(headers)).toBe(true)

    // While changes may have been missed (PostgreSQL's notification connection down), nothing
    // kept is trusted: each of the three lookups says so on its own.
    expect(admitted(headers)).toBe(true)
    const boss = (await identities.find(admin.id)) as NonNullable<
      Awaited<ReturnType<typeof identities.find>>
    >
    expect(identities.keptIdentity(admin.id)).toEqual(boss)
    expect(policies.keptPolicyOf(boss)).toBeDefined()
    expect(sessions.keptSession(token)).toBeDefined()
    flags.stale = true
    expect(identities.keptIdentity(admin.id)).toBeUndefined()
    expect(policies.keptPolicyOf(boss)).toBeUndefined()
    expect(sessions.keptSession(token)).toBeUndefined()
    expect(admitted(headers)).toBe(false)
    flags.stale = false
    expect(admitted(headers)).toBe(true)

    // Past its idle timeout the session is over, kept or not.
    clock.advance(60_000)
    expect(admitted(headers)).toBe(false)
    expect(await readAsTheHookDoes()).toBeUndefined()
  })
})

describe.skipIf(!PG_URL)('the admin list lanes on two instances of one PostgreSQL database', () => {
  it('follow changes through the other instance, and leave every answer to the route while notifications are down', async () => {
    const url = await freshPostgresUrl()
    const clock = testClock()
    const a = await buildTestApp({ config: { dbPath: url }, clock })
    const b = await buildTestApp({ config: { dbPath: url }, clock })
    const callA = caller(a, await login(a))
    const onB = await served(b)
    const headers = { 'zt-session': onB.admin }
    const namesOnB = async (path: string) => names(await get(onB.port, path, headers))
    const signer = (await callA('POST', M, listedSigner('before'))).json().data.id
    const identity = (await callA('POST', I, { name: 'ida' })).json().data.id
    await within(1000, async () => expect(await namesOnB(M)).toEqual(['before']))
    await within(1000, async () => expect(await namesOnB(I)).toEqual(['admin', 'ida']))
    await callA('PATCH', `${M}/${signer}`, { name: 'changed' })
    await within(1000, async () => expect(await namesOnB(M)).toEqual(['changed']))
    expect(await namesOnB(M)).toEqual(['changed'])
    expect(onB.byLane).toContain(M) // the page kept, and answered again from memory

    // A session kept on B, logged out through A: refused on B within a second.
    const other = await login(a)
    await within(1000, async () =>
      expect((await get(onB.port, M, { 'zt-session': other })).status).toBe(200),
    )
    expect((await get(onB.port, M, { 'zt-session': other })).status).toBe(200)
    const logout = await a.inject({
      method: 'DELETE',
      url: '/edge/management/v1/current-api-session',
      headers: { 'zt-session': other },
    })
    expect(logout.statusCode).toBe(200)
    await within(1000, async () =>
      expect((await get(onB.port, M, { 'zt-session': other })).status).toBe(401),
    )

    // Every listening connection cut, then changes no instance is told of (plain SQL, no NOTIFY):
    // B can only show them by reading the database.
    const cut = await cutListenersThen(url, [
      [`UPDATE signers SET name = 'unannounced' WHERE id = $1`, [signer]],
      [`UPDATE identities SET name = 'ida-unannounced' WHERE id = $1`, [identity]],
    ])
    expect(cut).toBe(2)
    await within(1000, async () => expect(await namesOnB(M)).toEqual(['unannounced']))
    await within(1000, async () => expect(await namesOnB(I)).toEqual(['admin', 'ida-unannounced']))
  })
})
