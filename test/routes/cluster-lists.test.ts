import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { cutListenersThen } from '../helpers/listeners.js'
import { listedSigner } from '../helpers/signers.js'
import { freshPostgresUrl, PG_URL } from '../helpers/stores.js'
import { within } from '../helpers/within.js'

// Two instances of one PostgreSQL database keep their list pages in memory and follow each
// other's changes through the store's notifications: a change through A shows on B within a
// second, and while B's notification connection is down B answers from the database.

const CLIENT = '/edge/client/v1/external-jwt-signers'
const M = '/edge/management/v1/external-jwt-signers'
const I = '/edge/management/v1/identities'
const P = '/edge/management/v1/auth-policies'

async function clientNames(app: FastifyInstance, query = ''): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: `${CLIENT}${query}` })
  expect(res.statusCode).toBe(200)
  return res.json().data.map((s: { name: string }) => s.name)
}

async function twoInstances() {
  const url = await freshPostgresUrl()
  const a = await buildTestApp({ config: { dbPath: url } })
  const b = await buildTestApp({ config: { dbPath: url } })
  return { url, a, b, callA: caller(a, await login(a)), callB: caller(b, await login(b)) }
}

describe.skipIf(!PG_URL)('kept lists on two instances of one PostgreSQL database', () => {
  it('client list: every kind of change through A shows on B within a second, default page and others', async () => {
    const { a, b, callA } = await twoInstances()
    const both = async (expected: string[]) => {
      await within(1000, async () => expect(await clientNames(b)).toEqual(expected))
      await within(1000, async () => expect(await clientNames(b, '?limit=5')).toEqual(expected))
      // A, which made the change, shows it in its very next response.
      expect(await clientNames(a)).toEqual(expected)
    }
    await both([])
    const id = (await callA('POST', M, listedSigner('alpha'))).json().data.id
    await both(['alpha'])
    const tag = (await b.inject({ method: 'GET', url: CLIENT })).headers.etag as string
    expect(
      (await b.inject({ method: 'GET', url: CLIENT, headers: { 'if-none-match': tag } }))
        .statusCode,
    ).toBe(304)
    await callA('PATCH', `${M}/${id}`, { name: 'beta' })
    await both(['beta'])
    await within(1000, async () => {
      const res = await b.inject({ method: 'GET', url: CLIENT, headers: { 'if-none-match': tag } })
      expect(res.statusCode).toBe(200)
    })
    await callA('PATCH', `${M}/${id}`, { enabled: false })
    await both([])
    await callA('PATCH', `${M}/${id}`, { enabled: true })
    await both(['beta'])
    await callA('PUT', `${M}/${id}`, listedSigner('gamma', { externalAuthUrl: null }))
    await both([])
    await callA('PUT', `${M}/${id}`, listedSigner('gamma'))
    await both(['gamma'])
    await callA('DELETE', `${M}/${id}`)
    await both([])
  })

  it('management signer list: ETag and 304 on B, and a change through A shows within a second', async () => {
    const { callA, callB } = await twoInstances()
    const id = (await callA('POST', M, listedSigner('one'))).json().data.id
    let first = await callB('GET', M)
    await within(1000, async () => {
      first = await callB('GET', M)
      expect(first.json().meta.pagination.totalCount).toBe(1)
    })
    const etag = first.headers.etag as string
    expect((await callB('GET', M, undefined, { 'if-none-match': etag })).statusCode).toBe(304)
    await callA('PATCH', `${M}/${id}`, { audience: 'changed' })
    await within(1000, async () => {
      const after = await callB('GET', M, undefined, { 'if-none-match': etag })
      expect(after.statusCode).toBe(200)
      expect(after.json().data[0].audience).toBe('changed')
    })
    await callA('DELETE', `${M}/${id}`)
    await within(1000, async () => expect((await callB('GET', M)).json().data).toEqual([]))
  })

  it('identity list: identities, policy names and sessions changed through A show on B within a second', async () => {
    const { a, callA, callB } = await twoInstances()
    const url = `${I}?filter=${encodeURIComponent('name contains "ali"')}`
    const onB = async () => (await callB('GET', url)).json().data
    expect(await onB()).toEqual([])
    const policy = (
      await callA('POST', P, {
        name: 'strict',
        primary: { cert: { allowed: false }, updb: { allowed: true }, extJwt: { allowed: false } },
        secondary: {},
      })
    ).json().data.id
    const id = (await callA('POST', I, { name: 'alice', authPolicyId: policy })).json().data.id
    await within(1000, async () =>
      expect((await onB()).map((i: { id: string }) => i.id)).toEqual([id]),
    )
    await callA('PATCH', `${I}/${id}`, { name: 'alicia' })
    await within(1000, async () =>
      expect((await onB())[0]).toMatchObject({ name: 'alicia', hasApiSession: false }),
    )
    await callA('PATCH', `${P}/${policy}`, { name: 'stricter' })
    await within(1000, async () => expect((await onB())[0].authPolicy.name).toBe('stricter'))

    // A session opened and ended through A (B keeps the page read after the password change).
    const before = (await onB())[0].updatedAt
    await new Promise((r) => setTimeout(r, 5))
    await callA('PUT', `${I}/${id}/password`, { password: 'alicia-password-1' })
    await within(1000, async () =>
      expect((await onB())[0]).toMatchObject({ updatedAt: expect.not.stringMatching(before) }),
    )
    expect((await onB())[0].hasApiSession).toBe(false)
    const session = await login(a, 'alicia', 'alicia-password-1')
    await within(1000, async () => expect((await onB())[0].hasApiSession).toBe(true))
    const logout = async (token: string) => {
      const res = await a.inject({
        method: 'DELETE',
        url: '/edge/client/v1/current-api-session',
        headers: { 'zt-session': token },
      })
      expect(res.statusCode).toBe(200)
    }
    // A second session (no news to B: she had one), then the first ended: B still shows one,
    // read after the end it heard of (the rename behind it shows B has heard of both).
    const second = await login(a, 'alicia', 'alicia-password-1')
    await logout(session)
    await callA('PATCH', `${I}/${id}`, { name: 'alicja' })
    await within(1000, async () => expect((await onB())[0].name).toBe('alicja'))
    expect((await onB())[0].hasApiSession).toBe(true)
    await logout(second)
    await within(1000, async () => expect((await onB())[0].hasApiSession).toBe(false))

    await callA('DELETE', `${I}/${id}`)
    await within(1000, async () => expect(await onB()).toEqual([]))
  })

  it('answers from the database while its notification connection is down, and keeps pages again once it is back', async () => {
    const { url, b, callA, callB } = await twoInstances()
    const signer = (await callA('POST', M, listedSigner('before'))).json().data.id
    const identity = (await callA('POST', I, { name: 'ida' })).json().data.id
    const identityName = async () =>
      (await callB('GET', `${I}?filter=${encodeURIComponent(`id = "${identity}"`)}`)).json().data[0]
        ?.name
    // B keeps all three pages.
    await within(1000, async () => expect(await clientNames(b)).toEqual(['before']))
    await within(1000, async () => expect(await identityName()).toBe('ida'))
    expect((await callB('GET', M)).json().data[0].name).toBe('before')

    // Every listening connection cut, then a change no instance is told of (plain SQL, no NOTIFY):
    // B can only show it by reading the database.
    const cut = await cutListenersThen(url, [
      [`UPDATE signers SET name = 'unannounced' WHERE id = $1`, [signer]],
      [`UPDATE identities SET name = 'ida-unannounced' WHERE id = $1`, [identity]],
    ])
    expect(cut).toBe(2)
    await within(1000, async () => expect(await clientNames(b)).toEqual(['unannounced']))
    await within(1000, async () => expect(await identityName()).toBe('ida-unannounced'))
    expect((await callB('GET', M)).json().data[0].name).toBe('unannounced')

    // Listening again (it reconnects by itself): changes through A show on B as before.
    await within(3000, async () => {
      await callA('PATCH', `${M}/${signer}`, { name: `after-${Date.now()}` })
      await within(500, async () => expect((await clientNames(b))[0]).toMatch(/^after-/))
    })
    await callA('PATCH', `${M}/${signer}`, { name: 'final' })
    await within(1000, async () => expect(await clientNames(b)).toEqual(['final']))
    await within(1000, async () =>
      expect((await callB('GET', M)).json().data[0].name).toBe('final'),
    )
    await callA('PATCH', `${I}/${identity}`, { name: 'ida-final' })
    await within(1000, async () => expect(await identityName()).toBe('ida-final'))
  })
})
