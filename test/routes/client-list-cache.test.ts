import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { listedSigner } from '../helpers/signers.js'
import { STORES } from '../helpers/stores.js'

const CLIENT = '/edge/client/v1/external-jwt-signers'
const M = '/edge/management/v1/external-jwt-signers'

async function names(app: FastifyInstance): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: CLIENT })
  expect(res.statusCode).toBe(200)
  return res.json().data.map((s: { name: string }) => s.name)
}

describe.each(STORES)('client signer list answers from memory, exactly, on %s', (storeKind) => {
  it('carries an ETag, answers 304 to If-None-Match with it, and 200 to any other', async () => {
    const app = await buildTestApp({ storeKind })
    const call = caller(app, await login(app))
    await call('POST', M, listedSigner('one'))
    const first = await app.inject({ method: 'GET', url: CLIENT })
    const etag = first.headers.etag as string
    expect(etag).toMatch(/^"[\w-]+"$/)
    expect(first.headers['content-type']).toMatch(/^application\/json/)
    const again = await app.inject({ method: 'GET', url: CLIENT })
    expect(again.headers.etag).toBe(etag)
    expect(again.body).toBe(first.body)
    const cached = await app.inject({
      method: 'GET',
      url: CLIENT,
      headers: { 'if-none-match': etag },
    })
    expect(cached.statusCode).toBe(304)
    expect(cached.body).toBe('')
    const weak = await app.inject({
      method: 'GET',
      url: CLIENT,
      headers: { 'if-none-match': `"other", W/${etag}` },
    })
    expect(weak.statusCode).toBe(304)
    const stale = await app.inject({
      method: 'GET',
      url: CLIENT,
      headers: { 'if-none-match': '"not-it"' },
    })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data).toHaveLength(1)
    // Another page has its own tag.
    const paged = await app.inject({ method: 'GET', url: `${CLIENT}?limit=1&offset=1` })
    expect(paged.json().data).toEqual([])
    expect(paged.headers.etag).not.toBe(etag)
  })

  it('keeps management signer pages too: ETag, 304, and every change in the very next response', async () => {
    const app = await buildTestApp({ storeKind })
    const call = caller(app, await login(app))
    const id = (await call('POST', M, listedSigner('one'))).json().data.id
    const first = await call('GET', M)
    const etag = first.headers.etag as string
    expect(first.json().meta.pagination.totalCount).toBe(1)
    expect((await call('GET', M, undefined, { 'if-none-match': etag })).statusCode).toBe(304)
    await call('PATCH', `${M}/${id}`, { audience: 'changed' })
    const after = await call('GET', M, undefined, { 'if-none-match': etag })
    expect(after.statusCode).toBe(200)
    expect(after.json().data[0].audience).toBe('changed')
    await call('DELETE', `${M}/${id}`)
    expect((await call('GET', M)).json().data).toEqual([])
    // Still an admin route: no session, no page.
    expect((await app.inject({ method: 'GET', url: M })).statusCode).toBe(401)
  })

  it('keeps identity pages exact: changes, passwords and sessions show in the very next response', async () => {
    const clock = testClock()
    const app = await buildTestApp({ storeKind, clock })
    const call = caller(app, await login(app))
    const I = '/edge/management/v1/identities'
    const page = async () =>
      (await call('GET', `${I}?filter=${encodeURIComponent('name contains "ali"')}`)).json().data
    const id = (await call('POST', I, { name: 'alice' })).json().data.id
    expect((await page()).map((i: { name: string }) => i.name)).toEqual(['alice'])
    await call('PATCH', `${I}/${id}`, { name: 'alicia' })
    const [renamed] = await page()
    expect(renamed).toMatchObject({ name: 'alicia', hasApiSession: false })
    clock.advance(1000)
    await call('PUT', `${I}/${id}/password`, { password: 'a-long-password-1' })
    const [withPassword] = await page()
    expect(withPassword.updatedAt).not.toBe(renamed.updatedAt)
    await login(app, 'alicia', 'a-long-password-1')
    expect((await page())[0].hasApiSession).toBe(true)
    await call('DELETE', `${I}/${id}`)
    expect(await page()).toEqual([])
  })

  it('keeps identity pages exact as sessions end and policies change, with ETag and 304', async () => {
    const clock = testClock()
    const app = await buildTestApp({ storeKind, clock, config: { sessionTimeoutMs: 60_000 } })
    const call = caller(app, await login(app))
    const I = '/edge/management/v1/identities'
    const P = '/edge/management/v1/auth-policies'
    const url = `${I}?filter=${encodeURIComponent('name = "dora"')}`
    const only = async () => (await call('GET', url)).json().data[0]
    const policy = (
      await call('POST', P, {
        name: 'strict',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: false } },
        secondary: {},
      })
    ).json().data.id
    const id = (await call('POST', I, { name: 'dora', authPolicyId: policy })).json().data.id
    await call('PUT', `${I}/${id}/password`, { password: 'dora-password-12' })
    const first = await call('GET', url)
    const etag = first.headers.etag as string
    expect(first.json().data[0]).toMatchObject({
      hasApiSession: false,
      authPolicy: { name: 'strict' },
    })
    expect((await call('GET', url, undefined, { 'if-none-match': etag })).statusCode).toBe(304)

    const dora = await login(app, 'dora', 'dora-password-12')
    const afterLogin = await call('GET', url, undefined, { 'if-none-match': etag })
    expect(afterLogin.statusCode).toBe(200)
    expect(afterLogin.json().data[0].hasApiSession).toBe(true)
    const logout = await app.inject({
      method: 'DELETE',
      url: '/edge/client/v1/current-api-session',
      headers: { 'zt-session': dora },
    })
    expect(logout.statusCode).toBe(200)
    expect((await only()).hasApiSession).toBe(false)

    await call('PATCH', `${P}/${policy}`, { name: 'stricter' })
    expect((await only()).authPolicy.name).toBe('stricter')

    // A session presented after its expiry is removed, and leaves the page at once as well.
    const later = await login(app, 'dora', 'dora-password-12')
    expect((await only()).hasApiSession).toBe(true)
    clock.advance(60_001)
    const admin = caller(app, await login(app))
    const expired = await app.inject({
      method: 'GET',
      url: '/edge/client/v1/current-api-session',
      headers: { 'zt-session': later },
    })
    expect(expired.statusCode).toBe(401)
    expect((await admin('GET', url)).json().data[0].hasApiSession).toBe(false)
  })

  it('shows every kind of change in the very next response', async () => {
    const app = await buildTestApp({ storeKind })
    const call = caller(app, await login(app))
    expect(await names(app)).toEqual([])
    const created = await call('POST', M, listedSigner('alpha'))
    const id = created.json().data.id
    const tag = (await app.inject({ method: 'GET', url: CLIENT })).headers.etag
    expect(await names(app)).toEqual(['alpha'])
    await call('PATCH', `${M}/${id}`, { name: 'beta' })
    expect(await names(app)).toEqual(['beta'])
    const after = await app.inject({
      method: 'GET',
      url: CLIENT,
      headers: { 'if-none-match': tag as string },
    })
    expect(after.statusCode).toBe(200)
    await call('PATCH', `${M}/${id}`, { enabled: false })
    expect(await names(app)).toEqual([])
    await call('PATCH', `${M}/${id}`, { enabled: true })
    expect(await names(app)).toEqual(['beta'])
    await call('PUT', `${M}/${id}`, listedSigner('gamma', { externalAuthUrl: null }))
    expect(await names(app)).toEqual([])
    await call('PUT', `${M}/${id}`, listedSigner('gamma'))
    expect(await names(app)).toEqual(['gamma'])
    await call('DELETE', `${M}/${id}`)
    expect(await names(app)).toEqual([])
  })
})
