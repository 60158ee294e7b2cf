import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, forEachStore, login } from '../helpers/app.js'

const CLIENT_SIGNERS = '/edge/client/v1/external-jwt-signers'
const IDENTITIES = '/edge/management/v1/identities'
const SIGNERS = '/edge/management/v1/external-jwt-signers'
const q = (filter: string) => `?filter=${encodeURIComponent(filter)}`

async function setup() {
  const app = await buildTestApp()
  const call = caller(app, await login(app))
  // A signer with a long name, so that contains reaches SQLite's trigram index.
  await call('POST', SIGNERS, {
    name: 'corp signer',
    enabled: true,
    issuer: 'https://login.corp.example',
    audience: 'ziti',
    jwksEndpoint: 'https://login.corp.example/jwks',
    externalAuthUrl: 'https://login.corp.example/auth',
  })
  return { app, call }
}

function expectCode(res: { statusCode: number; json(): unknown }, code: string, field?: string) {
  expect(res.statusCode).toBe(400)
  const { error } = res.json() as { error: { code: string; cause?: { field?: string } } }
  expect(error.code).toBe(code)
  if (field !== undefined) expect(error.cause?.field).toBe(field)
}

forEachStore(() => {
  describe('control characters and odd filters (finding: a NUL character makes unauthenticated 500s)', () => {
    it('answers 400 INVALID_FILTER to a NUL or other control character in a filter, unauthenticated or not', async () => {
      const { app, call } = await setup()
      for (const filter of [
        'name contains "a\u0000b"',
        'name contains "cor\u0000p"',
        'name = "x\u0001"',
        'name icontains "\u001bsigner"',
        'name = "a"\u0000',
      ]) {
        const anonymous = await app.inject({ method: 'GET', url: `${CLIENT_SIGNERS}${q(filter)}` })
        expectCode(anonymous, 'INVALID_FILTER')
        expectCode(await call('GET', `${IDENTITIES}${q(filter)}`), 'INVALID_FILTER')
        expectCode(await call('GET', `${SIGNERS}${q(filter)}`), 'INVALID_FILTER')
      }
      // Tab, and line breaks between tokens, are still whitespace.
      const spaced = await call(
        'GET',
        `${SIGNERS}${q('name contains "corp"\n\tand enabled = true')}`,
      )
      expect(spaced.statusCode).toBe(200)
      expect(spaced.json().data).toHaveLength(1)
    })

    it('refuses in and between whose values differ in type, and date-times outside years 1 to 9999', async () => {
      const { call } = await setup()
      for (const filter of [
        'tags.x between 1 and "z"',
        'tags.x in [1, "a", true]',
        'tags.x in ["a", 1]',
        'tags.x between "a" and true',
        'createdAt > "+275760-09-13T00:00:00Z"',
        'createdAt < "0001-01-01T00:00:00+01:00"',
        'createdAt between "2020-01-01T00:00:00Z" and "+010000-01-01T00:00:00Z"',
      ]) {
        expectCode(await call('GET', `${SIGNERS}${q(filter)}`), 'INVALID_FILTER')
        expectCode(await call('GET', `${IDENTITIES}${q(filter)}`), 'INVALID_FILTER')
      }
      for (const filter of [
        'tags.x in [1, 2, 3]',
        'tags.x between "a" and "z"',
        'createdAt > "0001-01-01T00:00:00Z" and createdAt < datetime(9999-12-31T23:59:59Z)',
      ]) {
        expect((await call('GET', `${SIGNERS}${q(filter)}`)).statusCode).toBe(200)
      }
    })

    it('answers 400 naming the field to a control character in a body string or member name', async () => {
      const { app, call } = await setup()
      const loginRes = await app.inject({
        method: 'POST',
        url: '/edge/management/v1/authenticate?method=password',
        payload: { username: 'ad\u0000min', password: 'x' },
      })
      expectCode(loginRes, 'COULD_NOT_VALIDATE', 'username')
      expectCode(await call('POST', IDENTITIES, { name: 'a\u0000b' }), 'COULD_NOT_VALIDATE', 'name')
      expectCode(
        await call('POST', IDENTITIES, { name: 'line\nbreak' }),
        'COULD_NOT_VALIDATE',
        'name',
      )
      expectCode(
        await call('POST', IDENTITIES, { name: 'ok', tags: { 'k\u0007': 'v' } }),
        'COULD_NOT_VALIDATE',
        'tags.k\u0007',
      )
      expectCode(
        await call('POST', IDENTITIES, { name: 'ok', tags: { list: ['a', 'b\u0000'] } }),
        'COULD_NOT_VALIDATE',
        'tags.list[1]',
      )
      const withTab = await call('POST', IDENTITIES, { name: 'tab\there' })
      expect(withTab.statusCode).toBe(201)
      expect(
        (await call('GET', IDENTITIES)).json().data.map((i: { name: string }) => i.name),
      ).not.toContain('a\u0000b')
    })

    it('answers 400 naming the field to a lone surrogate in a body string or member name, which no store keeps as sent', async () => {
      const { call } = await setup()
      const lone = 'a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape) is not allowed'
      for (const [url, body, field] of [
        [
          SIGNERS,
          {
            name: 'corp\ud800',
            enabled: true,
            issuer: 'https://x.example',
            audience: 'ziti',
            jwksEndpoint: 'https://x.example/jwks',
          },
          'name',
        ],
        [IDENTITIES, { name: 'bob', externalId: 'x\udc00y' }, 'externalId'],
        [IDENTITIES, { name: 'bob', tags: { 'k\ud83d': 'v' } }, 'tags.k\ud83d'],
        [IDENTITIES, { name: 'bob', roleAttributes: ['ok', '\udfff'] }, 'roleAttributes[1]'],
      ] as const) {
        const res = await call('POST', url, body)
        expectCode(res, 'COULD_NOT_VALIDATE', field)
        expect(res.json().error.cause.reason).toBe(lone)
      }
      // A pair is one character; an escaped backslash before "ud800" is no escape of a surrogate.
      const pair = await call('POST', IDENTITIES, {
        name: 'smile \ud83d\ude00',
        externalId: '\\ud800',
      })
      expect(pair.statusCode).toBe(201)
      const stored = (await call('GET', `${IDENTITIES}/${pair.json().data.id}`)).json().data
      expect(stored).toMatchObject({ name: 'smile \u{1F600}', externalId: '\\ud800' })
    })

    it('never answers 500 to a NUL in a path parameter', async () => {
      const { call } = await setup()
      for (const url of [`${IDENTITIES}/a%00b`, `${SIGNERS}/a%00b`, `${SIGNERS}/a%00b/keys`]) {
        const res = await call('GET', url)
        expect(res.statusCode).toBeGreaterThanOrEqual(400)
        expect(res.statusCode).toBeLessThan(500)
      }
      const patch = await call('PATCH', `${IDENTITIES}/a%00b`, { name: 'x' })
      expect(patch.statusCode).toBeLessThan(500)
    })
  })
})
