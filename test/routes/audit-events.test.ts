import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { AuditService } from '../../src/audit/audit-service.js'
import type { Config } from '../../src/config.js'
import type { Store } from '../../src/store/contract.js'
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  buildTestApp,
  caller,
  forEachStore,
  login,
  testClock,
} from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { openTestStore } from '../helpers/stores.js'

const M = '/edge/management/v1'
const EVENTS = `${M}/audit-events`
const SIGNERS = `${M}/external-jwt-signers`
const IDENTITIES = `${M}/identities`
const POLICIES = `${M}/auth-policies`
const ISSUER = 'https://idp.audit.example'
const HOUR = 3_600_000

let cert: TestCert
beforeAll(async () => {
  cert = await makeCert()
})

function capture() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean))
      done()
    },
  })
  return { lines, stream }
}

/** The app on a clock that moves 1 s per call, so each event has its own `at`; logs captured. */
async function setup(
  options: { store?: Store; clock?: ReturnType<typeof testClock>; config?: Partial<Config> } = {},
) {
  const clock = options.clock ?? testClock()
  const { lines, stream } = capture()
  const store = options.store ? { store: options.store } : {}
  const config = options.config ?? {}
  const app = await buildTestApp({ clock, logger: { level: 'info', stream }, config, ...store })
  const token = await login(app)
  const raw = caller(app, token)
  const call = async (method: string, url: string, payload?: unknown) => {
    clock.advance(1000)
    return raw(method, url, payload)
  }
  const me = (await raw('GET', `${M}/current-api-session`)).json().data
  const admin = { id: me.identityId as string, name: ADMIN_USER }
  const events = async (query = '') => {
    const res = await raw('GET', `${EVENTS}${query}`)
    expect(res.statusCode).toBe(200)
    return res.json().data as Record<string, unknown>[]
  }
  return { app, clock, lines, token, call, raw, admin, adminSession: me.id as string, events }
}

const signerBody = {
  name: 'corp',
  enabled: true,
  issuer: ISSUER,
  audience: 'ziti',
  jwksEndpoint: 'https://idp.audit.example/jwks',
  tags: { team: 'secret-team-value' },
}

async function eventsOf(events: (q?: string) => Promise<Record<string, unknown>[]>, id: string) {
  return events(`?filter=${encodeURIComponent(`entityId = "${id}"`)}&sort=at asc`)
}

async function passwordLogin(app: FastifyInstance, username: string, password: string) {
  return app.inject({
    method: 'POST',
    url: `${M}/authenticate?method=password`,
    payload: { username, password },
  })
}

forEachStore((kind) => {
  describe('audit events', () => {
    it('records create, PUT, PATCH and delete of a signer with actor and field names only', async () => {
      const s = await setup()
      const id = (await s.call('POST', SIGNERS, signerBody)).json().data.id
      const { tags: _, ...untagged } = signerBody
      const put = await s.call('PUT', `${SIGNERS}/${id}`, { ...untagged, audience: 'other' })
      expect(put.statusCode).toBe(200)
      const patched = await s.call('PATCH', `${SIGNERS}/${id}`, { enabled: false, tags: null })
      expect(patched.statusCode).toBe(200)
      expect((await s.call('DELETE', `${SIGNERS}/${id}`)).statusCode).toBe(200)

      const list = await eventsOf(s.events, id)
      expect(list.map((e) => e.action)).toEqual(['create', 'update', 'patch', 'delete'])
      for (const e of list) {
        expect(e).toMatchObject({
          actor: s.admin,
          entityType: 'external-jwt-signers',
          entityId: id,
          method: null,
        })
        expect(e.requestId).toEqual(expect.any(String))
        expect(Date.parse(e.at as string)).not.toBeNaN()
      }
      expect(new Set(list.map((e) => e.requestId)).size).toBe(4)
      expect(list[0]?.changedFields).toEqual(
        expect.arrayContaining(['name', 'enabled', 'issuer', 'audience', 'jwksEndpoint', 'tags']),
      )
      // PUT: the fields that differ from before (the omitted tags were reset to {}).
      expect(new Set(list[1]?.changedFields as string[])).toEqual(new Set(['audience', 'tags']))
      expect(list[2]?.changedFields).toEqual(['enabled', 'tags'])
      expect(list[3]?.changedFields).toEqual([])
      const text = JSON.stringify(list)
      for (const value of [ISSUER, 'secret-team-value', 'other']) expect(text).not.toContain(value)
    })

    it('records identity writes and set-password, never the password', async () => {
      const s = await setup()
      const id = (await s.call('POST', IDENTITIES, { name: 'alice', externalId: null })).json().data
        .id
      await s.call('PUT', `${IDENTITIES}/${id}`, { name: 'alice2', isAdmin: false })
      await s.call('PATCH', `${IDENTITIES}/${id}`, { disabled: true, externalId: null })
      const password = 'a-secret-password-1'
      expect((await s.call('PUT', `${IDENTITIES}/${id}/password`, { password })).statusCode).toBe(
        200,
      )
      await s.call('DELETE', `${IDENTITIES}/${id}`)

      const list = await eventsOf(s.events, id)
      expect(list.map((e) => [e.action, e.changedFields])).toEqual([
        ['create', ['name']],
        ['update', ['name']],
        ['patch', ['disabled', 'externalId']],
        ['set-password', ['password']],
        ['delete', []],
      ])
      for (const e of list) expect(e).toMatchObject({ actor: s.admin, entityType: 'identities' })
      expect(JSON.stringify(list)).not.toContain(password)
      const audited = s.lines.filter((l) => l.includes('"audit":true'))
      expect(audited.length).toBeGreaterThanOrEqual(5)
      for (const line of s.lines) expect(line).not.toContain(password)
    })

    it('records auth policy writes with dotted field names', async () => {
      const s = await setup()
      const body = {
        name: 'strict',
        primary: {
          cert: { allowed: false },
          updb: { allowed: true, minPasswordLength: 16 },
          extJwt: { allowed: false },
        },
        secondary: {},
      }
      const id = (await s.call('POST', POLICIES, body)).json().data.id
      const put = {
        ...body,
        primary: { ...body.primary, updb: { allowed: true, minPasswordLength: 20 } },
      }
      await s.call('PUT', `${POLICIES}/${id}`, put)
      await s.call('PATCH', `${POLICIES}/${id}`, { primary: { extJwt: { allowed: true } } })
      await s.call('DELETE', `${POLICIES}/${id}`)

      const list = await eventsOf(s.events, id)
      expect(list.map((e) => e.action)).toEqual(['create', 'update', 'patch', 'delete'])
      expect(list[0]?.changedFields).toEqual([
        'name',
        'primary.cert.allowed',
        'primary.updb.allowed',
        'primary.updb.minPasswordLength',
        'primary.extJwt.allowed',
      ])
      expect(list[1]?.changedFields).toEqual(['primary.updb.minPasswordLength'])
      expect(list[2]?.changedFields).toEqual(['primary.extJwt.allowed'])
      for (const e of list) expect(e).toMatchObject({ actor: s.admin, entityType: 'auth-policies' })
    })

    it('records logins by method with the identity as actor, and logouts', async () => {
      const s = await setup()
      await s.call('POST', SIGNERS, {
        name: 'cert',
        enabled: true,
        issuer: ISSUER,
        audience: 'ziti',
        certPem: cert.certPem,
        kid: 'k1',
      })
      const alice = (await s.call('POST', IDENTITIES, { name: 'alice' })).json().data.id
      const jwt = await signJwt(
        cert.privateKey,
        { iss: ISSUER, aud: 'ziti', sub: alice },
        { kid: 'k1', now: s.clock() },
      )
      const jwtLogin = await s.app.inject({
        method: 'POST',
        url: '/edge/client/v1/authenticate?method=ext-jwt',
        headers: { authorization: `Bearer ${jwt}` },
      })
      expect(jwtLogin.statusCode).toBe(200)
      const aliceSession = jwtLogin.json().data.id
      const aliceLoggedInAt = jwtLogin.json().data.createdAt
      const logout = await s.app.inject({
        method: 'DELETE',
        url: '/edge/client/v1/current-api-session',
        headers: { 'zt-session': jwtLogin.headers['zt-session'] as string },
      })
      expect(logout.statusCode).toBe(200)

      const logins = await s.events(`?filter=${encodeURIComponent('action = "login"')}`)
      expect(logins).toHaveLength(2)
      // Newest first by default.
      expect(logins[0]).toMatchObject({
        actor: { id: alice, name: 'alice' },
        entityType: 'api-sessions',
        entityId: aliceSession,
        method: 'ext-jwt',
        changedFields: [],
        at: aliceLoggedInAt, // a login happens as its session is created (this clock moves per call)
      })
      expect(logins[1]).toMatchObject({
        actor: s.admin,
        entityId: s.adminSession,
        method: 'password',
      })
      const logouts = await s.events(`?filter=${encodeURIComponent('action = "logout"')}`)
      expect(logouts).toEqual([
        expect.objectContaining({
          actor: { id: alice, name: 'alice' },
          entityType: 'api-sessions',
          entityId: aliceSession,
          method: null,
        }),
      ])
      for (const line of s.lines) expect(line).not.toContain(jwt)
      // A login logs one line besides the access log: its audit event, naming the authenticator.
      const signerId = (await s.call('GET', SIGNERS)).json().data[0].id
      // The line names the session by a digest of its id (the first half of its token), never the id.
      const digest = createHash('sha256').update(aliceSession).digest('hex').slice(0, 16)
      const loginLines = s.lines
        .map((l) => JSON.parse(l))
        .filter((l) => l.sessionDigest === digest && l.action === 'login')
      expect(loginLines).toEqual([
        expect.objectContaining({ msg: 'audit event', authenticatorId: `extJwtId:${signerId}` }),
      ])
      for (const line of s.lines) expect(line).not.toContain(aliceSession)
    })

    it('stores a failed password login of a known name with the reason, never the password; logs an unknown name without storing it; no failed JWT login', async () => {
      const s = await setup()
      const before = (await s.events()).length
      expect((await passwordLogin(s.app, ADMIN_USER, 'wrong-password-123')).statusCode).toBe(401)
      expect((await passwordLogin(s.app, 'nobody', ADMIN_PASSWORD)).statusCode).toBe(401)
      const bad = await s.app.inject({
        method: 'POST',
        url: '/edge/client/v1/authenticate?method=ext-jwt',
        headers: { authorization: 'Bearer not.a.jwt' },
      })
      expect(bad.statusCode).toBe(401)
      // Stored after the answer (a known name's 401 waits for no insert): wait for it.
      const events = await vi.waitFor(async () => {
        const now = await s.events()
        expect(now).toHaveLength(before + 1)
        return now
      })
      const failed = events.filter((e) => e.action === 'login-failed')
      expect(failed.map((e) => (e.actor as { name: string }).name)).toEqual([ADMIN_USER])
      const text = JSON.stringify(failed)
      expect(text).toContain('wrong-password')
      expect(text).not.toContain('wrong-password-123')
      expect(text).not.toContain(ADMIN_PASSWORD)
      // Many unknown names: one log line each, not one row.
      for (let i = 0; i < 5; i++) await passwordLogin(s.app, `nobody-${i}`, ADMIN_PASSWORD)
      expect(await s.events()).toHaveLength(before + 1)
      await passwordLogin(s.app, 'nobody-0', ADMIN_PASSWORD)
      const unknown = s.lines
        .map((l) => JSON.parse(l))
        .filter((l) => l.action === 'login-failed' && l.stored === 'false')
      expect(unknown).toHaveLength(7)
      expect(unknown[0]).toMatchObject({
        msg: 'audit event',
        audit: true,
        actorName: '',
        changedFields: ['unknown-user'],
      })
      // The name's text is never logged (it may be a password typed into the wrong field): a
      // digest of it tells one name's repeats apart.
      const digests = unknown.map((l) => l.unknownNameDigest as string)
      for (const d of digests) expect(d).toMatch(/^[0-9a-f]{16}$/)
      expect(new Set(digests).size).toBe(6)
      expect(digests[6]).toBe(digests[1])
      for (const line of s.lines) expect(line).not.toContain('nobody')
      for (const line of s.lines) expect(line).not.toContain(ADMIN_PASSWORD)
    })

    it('stores nothing for a change that fails', async () => {
      const s = await setup()
      const first = (await s.call('POST', SIGNERS, signerBody)).json().data.id
      const count = async () => (await s.raw('GET', `${EVENTS}?limit=1`)).json().meta.pagination
      const before = (await count()).totalCount
      const dup = await s.call('POST', SIGNERS, { ...signerBody, issuer: 'https://other.example' })
      expect(dup.statusCode).toBe(400)
      const dupIdentity = await s.call('POST', IDENTITIES, { name: ADMIN_USER })
      expect(dupIdentity.statusCode).toBe(400)
      expect((await s.call('DELETE', `${SIGNERS}/no-such-id`)).statusCode).toBe(404)
      const lastAdmin = await s.call('PATCH', `${IDENTITIES}/${s.admin.id}`, { isAdmin: false })
      expect(lastAdmin.statusCode).toBe(409)
      const policy = await s.call('POST', POLICIES, {
        name: 'uses-signer',
        primary: {
          cert: { allowed: false },
          updb: { allowed: true },
          extJwt: { allowed: true, allowedSigners: [first] },
        },
        secondary: {},
      })
      expect(policy.statusCode).toBe(201)
      const after = (await count()).totalCount
      expect(after).toBe(before + 1)
      expect((await s.call('DELETE', `${SIGNERS}/${first}`)).statusCode).toBe(409)
      expect((await count()).totalCount).toBe(after)
    })

    it('rolls the change back when its audit event cannot be stored (one transaction)', async () => {
      const s = await setup()
      const spy = vi
        .spyOn(AuditService.prototype, 'record')
        .mockRejectedValueOnce(new Error('audit store down'))
      onTestFinished(() => spy.mockRestore())
      expect((await s.call('POST', SIGNERS, signerBody)).statusCode).toBe(500)
      expect((await s.raw('GET', SIGNERS)).json().meta.pagination.totalCount).toBe(0)
      expect((await s.call('POST', SIGNERS, signerBody)).statusCode).toBe(201)
    })

    it('lists with pagination, filters on each field, sorts, and is admin only', async () => {
      const s = await setup()
      const t0 = s.clock().toISOString()
      const signer = (await s.call('POST', SIGNERS, signerBody)).json().data.id
      const bobId = (await s.call('POST', IDENTITIES, { name: 'bob', isAdmin: false })).json().data
        .id
      await s.call('PUT', `${IDENTITIES}/${bobId}/password`, { password: 'bob-password-123' })

      const res = await s.raw('GET', `${EVENTS}?limit=2`)
      expect(res.statusCode).toBe(200)
      const body = res.json()
      expect(body.meta.pagination).toEqual({ limit: 2, offset: 0, totalCount: 4 })
      expect(body.meta.filterableFields).toEqual(
        expect.arrayContaining(['action', 'entityType', 'entityId', 'actor.id', 'at']),
      )
      expect(body.data.map((e: { action: string }) => e.action)).toEqual(['set-password', 'create'])
      const asc = await s.events('?sort=at%20asc')
      expect(asc.map((e) => e.action)).toEqual(['login', 'create', 'create', 'set-password'])

      const q = (filter: string) => s.events(`?filter=${encodeURIComponent(filter)}`)
      expect(await q(`entityType = "external-jwt-signers"`)).toHaveLength(1)
      expect(await q(`entityId = "${signer}"`)).toHaveLength(1)
      expect(await q(`actor.id = "${s.admin.id}"`)).toHaveLength(4)
      expect(await q(`actor.id = "someone-else"`)).toHaveLength(0)
      expect(await q(`action in ["create", "set-password"]`)).toHaveLength(3)
      expect(await q(`at > datetime(${t0})`)).toHaveLength(3)
      expect(await q(`action = "create" sort by at desc limit 1`)).toEqual([
        expect.objectContaining({ entityType: 'identities' }),
      ])

      const unknown = await s.raw('GET', `${EVENTS}?filter=${encodeURIComponent('secret = "x"')}`)
      expect(unknown.statusCode).toBe(400)
      expect(unknown.json().error.code).toBe('INVALID_FILTER')
      const badSort = await s.raw('GET', `${EVENTS}?sort=secret`)
      expect(badSort.json().error.code).toBe('INVALID_SORT_IDENTIFIER')
      // The trail grows with every login: never every event at once, only pages of at most 500.
      const all = await s.raw('GET', `${EVENTS}?limit=-1`)
      expect(all.statusCode).toBe(400)
      expect(all.json().error).toMatchObject({
        code: 'INVALID_PAGINATION',
        cause: { field: 'limit', value: '-1' },
      })
      const none = await s.raw('GET', `${EVENTS}?filter=${encodeURIComponent('limit none')}`)
      expect(none.statusCode).toBe(400)
      expect(none.json().error).toMatchObject({
        code: 'INVALID_FILTER',
        cause: { field: 'filter' },
      })
      const most = await s.raw('GET', `${EVENTS}?limit=100000`)
      expect(most.json().meta.pagination).toEqual({ limit: 500, offset: 0, totalCount: 4 })

      expect((await s.app.inject({ method: 'GET', url: EVENTS })).statusCode).toBe(401)
      const bob = await login(s.app, 'bob', 'bob-password-123')
      const refused = await caller(s.app, bob)('GET', EVENTS)
      expect(refused.statusCode).toBe(401)
      expect(refused.json().error.code).toBe('UNAUTHORIZED')
    })

    it('logs each event once as an audit line without values', async () => {
      const s = await setup()
      const id = (await s.call('POST', SIGNERS, signerBody)).json().data.id
      const lines = s.lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.audit === true)
      const created = lines.filter((l) => l.entityId === id)
      expect(created).toHaveLength(1)
      expect(created[0]).toMatchObject({
        action: 'create',
        entityType: 'external-jwt-signers',
        actorId: s.admin.id,
      })
      expect(JSON.stringify(created[0])).not.toContain('secret-team-value')
    })

    it('purges events older than CTRL_AUDIT_RETENTION (frozen clock, purge called directly)', async () => {
      const store = await openTestStore(kind)
      onTestFinished(() => store.close())
      const clock = testClock()
      const s = await setup({ store, clock, config: { sessionTimeoutMs: 1000 * HOUR } })
      await s.call('POST', IDENTITIES, { name: 'old' })
      clock.advance(400 * HOUR)
      const recent = (await s.call('POST', IDENTITIES, { name: 'recent' })).json().data.id
      const log = { info: () => {} }
      const audit = new AuditService({ store, clock, log, retentionMs: 720 * HOUR })
      expect(await audit.purgeExpired()).toBe(0)
      clock.advance(320 * HOUR) // 720 h and a second after the first create
      expect(await audit.purgeExpired()).toBe(2) // the admin's login and the first create
      const left = (await audit.list({})).items
      expect(left).toEqual([expect.objectContaining({ action: 'create', entityId: recent })])
    })
  })
})
