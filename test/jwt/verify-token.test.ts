import { Writable } from 'node:stream'
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { openTestStore } from '../helpers/stores.js'

const SIGNERS = '/edge/management/v1/external-jwt-signers'
const VERIFY = `${SIGNERS}/verify-token`
const ISSUER = 'https://idp.explain.example'
const NOW = new Date('2026-11-22T08:00:00.000Z')
const T = Math.floor(NOW.getTime() / 1000)

let cert: TestCert
let stranger: TestCert
beforeAll(async () => {
  ;[cert, stranger] = await Promise.all([makeCert(), makeCert()])
})

/** The real app on a store the test can count sessions in, with a certificate signer, identities and a log capture. */
async function setup() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _e, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean))
      done()
    },
  })
  const store = await openTestStore('sqlite')
  onTestFinished(() => store.close())
  const app = await buildTestApp({
    store,
    clock: testClock(NOW.toISOString()),
    logger: { level: 'trace', stream },
  })
  const call = caller(app, await login(app))
  const created = async (url: string, body: object) => {
    const res = await call('POST', url, body)
    expect(res.statusCode).toBe(201)
    return res.json().data.id as string
  }
  const signerId = await created(SIGNERS, {
    name: 'explain',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: cert.certPem,
    kid: 'k1',
  })
  const noJwt = await created('/edge/management/v1/auth-policies', {
    name: 'password only',
    primary: {
      cert: { allowed: false },
      updb: { allowed: true },
      extJwt: { allowed: false, allowedSigners: [] },
    },
    secondary: { requireTotp: false, requireExtJwtSigner: null },
  })
  const identity = (body: object) => created('/edge/management/v1/identities', body)
  const ids = {
    signer: signerId,
    alice: await identity({ name: 'alice' }),
    bob: await identity({ name: 'bob', disabled: true }),
    carol: await identity({ name: 'carol', authPolicyId: noJwt }),
  }
  const explain = async (token: unknown, path = 'external-jwt-signers') => {
    const res = await call('POST', `/edge/management/v1/${path}/verify-token`, { token })
    expect(res.statusCode).toBe(200)
    expect(res.json().meta).toEqual({})
    return res.json().data
  }
  const sessions = () => store.repos.sessions.count()
  const loginReason = async (token: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/edge/client/v1/authenticate?method=ext-jwt',
      headers: { authorization: `Bearer ${token}` },
    })
    expect(res.statusCode).toBe(401)
    return lines.map((l) => JSON.parse(l)).findLast((l) => l.msg === 'ext-jwt login refused')
      ?.reason
  }
  return { app, call, ids, explain, sessions, lines, loginReason }
}

const sign = (claims: Record<string, unknown>, over: { kid?: string; key?: TestCert } = {}) =>
  signJwt(
    (over.key ?? cert).privateKey,
    { iss: ISSUER, aud: 'ziti', ...claims },
    {
      kid: over.kid ?? 'k1',
      now: NOW,
    },
  )

describe('verify-token', () => {
  it('accepts a good token, with its signer, kid, identity, header and claims', async () => {
    const s = await setup()
    const token = await sign({ sub: s.ids.alice })
    for (const path of ['external-jwt-signers', 'ext-jwt-signers']) {
      expect(await s.explain(token, path)).toEqual({
        accepted: true,
        kind: null,
        reason: null,
        rule: null,
        ruleMessage: null,
        signerId: s.ids.signer,
        kid: 'k1',
        identityId: s.ids.alice,
        header: { alg: 'RS256', kid: 'k1' },
        claims: { iss: ISSUER, aud: 'ziti', sub: s.ids.alice, iat: T, exp: T + 3600 },
      })
    }
  })

  it('gives the precise reason of each refusal, as the login log does', async () => {
    const s = await setup()
    const { alice, bob, carol, signer } = s.ids
    const cases: [string, string, string, Record<string, unknown>][] = [
      [await sign({ sub: alice, exp: T - 3600 }), 'expired', 'token expired', { signerId: signer }],
      [await sign({ sub: alice, aud: 'x' }), 'audience', 'audience mismatch', { kid: 'k1' }],
      [
        await sign({ sub: alice, iss: 'https://nobody.example' }),
        'unknown_issuer',
        'no enabled signer has this issuer',
        { signerId: null, kid: null },
      ],
      [
        await sign({ sub: alice }, { kid: 'k2' }),
        'unknown_kid',
        'kid does not match the signer',
        { signerId: signer, kid: 'k2' },
      ],
      [
        await sign({ sub: alice }, { key: stranger }),
        'bad_signature',
        'signature does not verify',
        {},
      ],
      [
        await sign({ sub: 'nobody' }),
        'no_identity',
        'no identity with that id',
        { identityId: null },
      ],
      [await sign({ sub: bob }), 'identity_disabled', 'identity is disabled', { identityId: bob }],
      [
        await sign({ sub: carol }),
        'policy',
        'policy does not allow JWT login',
        { identityId: carol, signerId: signer },
      ],
    ]
    for (const [token, kind, reason, more] of cases) {
      const data = await s.explain(token)
      expect(data).toMatchObject({ accepted: false, kind, reason, ...more })
      expect(data.claims.iss).toBeTypeOf('string')
      expect(await s.loginReason(token)).toBe(reason)
    }
  })

  it('answers a token that is not a JWS with null header and claims', async () => {
    const s = await setup()
    for (const token of ['', 'not-a-jwt', 'a.b.c.d.e', `${'x'.repeat(9000)}.y.z`]) {
      const data = await s.explain(token)
      expect(data).toMatchObject({ accepted: false, kind: 'malformed', header: null })
      expect(data.claims).toBeNull()
    }
    const garbage = await s.explain('eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln')
    expect(garbage).toMatchObject({
      accepted: false,
      kind: 'malformed',
      header: { alg: 'RS256' },
      claims: null,
    })
  })

  it('creates no session and logs no token', async () => {
    const s = await setup()
    const before = await s.sessions()
    const good = await sign({ sub: s.ids.alice })
    const bad = await sign({ sub: s.ids.bob })
    expect((await s.explain(good)).accepted).toBe(true)
    expect((await s.explain(bad)).accepted).toBe(false)
    expect(await s.sessions()).toBe(before)

    const all = s.lines.join('\n')
    expect(s.lines.some((l) => JSON.parse(l).msg === 'token explained')).toBe(true)
    for (const token of [good, bad]) {
      for (const part of token.split('.')) expect(all).not.toContain(part)
    }
    expect(s.lines.filter((l) => JSON.parse(l).msg === 'ext-jwt login refused')).toEqual([])
  })

  it('leaves login as it was: the explained token still logs in afterwards', async () => {
    const s = await setup()
    const token = await sign({ sub: s.ids.alice })
    await s.explain(token)
    const res = await s.app.inject({
      method: 'POST',
      url: '/edge/client/v1/authenticate?method=ext-jwt',
      headers: { authorization: `Bearer ${token}` },
    })
    expect(res.statusCode).toBe(200)
    expect(await s.sessions()).toBe(2)
  })

  it('is admin only and validates its body', async () => {
    const s = await setup()
    const anonymous = await s.app.inject({ method: 'POST', url: VERIFY, payload: { token: 'x' } })
    expect(anonymous.statusCode).toBe(401)
    for (const [body, code] of [
      [{}, 'COULD_NOT_VALIDATE'],
      [{ token: 1 }, 'COULD_NOT_VALIDATE'], // a wrong JSON type
      [{ token: 'x', extra: true }, 'COULD_NOT_VALIDATE'],
    ] as const) {
      const res = await s.call('POST', VERIFY, body)
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe(code)
    }
  })
})
