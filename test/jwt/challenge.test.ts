import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  bearerCandidates,
  bearerChallenge,
  bearerTokens,
  hasWhitespace,
  MAX_CHALLENGE,
  quote,
} from '../../src/jwt/challenge.js'
import { buildTestApp, caller, login } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'

const LOGIN = '/edge/client/v1/authenticate?method=ext-jwt'
/** What Node (RFC 9110 field-value) lets a header carry. */
const VALID_HEADER = /^[\t\x20-\x7e\x80-\xff]*$/

/** Reads a parameter of the challenge back into the stored values it lists. */
function values(header: string, name: string): string[] {
  const m = new RegExp(` ${name}="((?:[^"\\\\]|\\\\.)*)"`).exec(header)
  if (!m?.[1]) return []
  return m[1]
    .replace(/\\(.)/g, '$1')
    .split('|')
    .map((v) => decodeURIComponent(v))
}

const STRANGE = [
  'https://idp.example/😀',
  'https://idp.example/\u0001bell\u0007',
  'quote " and \\ backslash',
  '100% | piped',
  'café\u0085\u007f\ttab',
  'lone \ud800 surrogate',
]

describe('bearerCandidates', () => {
  const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl'
  /** Header values built of the parts that matter: schemes, whitespace of every kind, tokens. */
  const piece = fc.constantFrom(
    'Bearer',
    'bearer',
    'BEARER',
    'bEaReR',
    'Basic',
    'Bearar',
    'Bearerx',
    ' ',
    '\t',
    '\u00a0',
    '\u2028',
    '\ufeff',
    '\u3000',
    TOKEN,
    'a',
    '.',
    '😀',
  )
  const value = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''))
  const name = fc.constantFrom('Authorization', 'authorization', 'AUTHORIZATION', 'x-other', 'Host')
  const headers = fc.array(fc.tuple(name, value), { maxLength: 6 }).map((pairs) => pairs.flat())

  it('finds every bearer token, at the same place or earlier, and no other whitespace-free one', () => {
    fc.assert(
      fc.property(headers, (raw) => {
        const strict = bearerTokens(raw)
        const quick = bearerCandidates(raw).filter((t) => !hasWhitespace(t))
        // What the quick parse gives without whitespace is where bearerTokens' list begins.
        expect(strict.slice(0, quick.length)).toEqual(quick)
        // And bearerTokens finds nothing the quick parse missed, up to its limit of three.
        if (bearerCandidates(raw).length < 3) expect(quick).toEqual(strict)
      }),
      { numRuns: 2000 },
    )
  })

  it('reads the examples as bearerTokens does', () => {
    const raw = (...values: string[]) => values.flatMap((v) => ['Authorization', v])
    for (const v of [
      `Bearer ${TOKEN}`,
      ` bearer\t${TOKEN} `,
      `BEARER \u00a0${TOKEN}\ufeff`,
      `bEaReR ${TOKEN}`,
    ]) {
      expect(bearerCandidates(raw(v))).toEqual([TOKEN])
      expect(bearerTokens(raw(v))).toEqual([TOKEN])
    }
    for (const v of [
      'Bearer',
      'Bearer ',
      `Bearer${TOKEN}`,
      `Basic ${TOKEN}`,
      `Bearerx ${TOKEN}`,
      `Bearar ${TOKEN}`,
      `\u0002earer ${TOKEN}`,
    ]) {
      expect(bearerCandidates(raw(v))).toEqual([])
      expect(bearerTokens(raw(v))).toEqual([])
    }
    // A value with whitespace inside is a candidate, never a bearer token.
    expect(bearerCandidates(raw(`Bearer ${TOKEN} x`))).toEqual([`${TOKEN} x`])
    expect(bearerTokens(raw(`Bearer ${TOKEN} x`))).toEqual([])
    expect(bearerCandidates(raw('Bearer a', 'Bearer b', 'Bearer c', 'Bearer d'))).toEqual([
      'a',
      'b',
      'c',
    ])
  })
})

describe('quote', () => {
  it.each(STRANGE)('yields a valid, reversible header value for %j', (value) => {
    const quoted = quote(value)
    expect(quoted).toMatch(VALID_HEADER)
    const header = bearerChallenge('openziti-primary-ext-jwt', 'invalid', [
      { id: 'a', issuer: value },
    ])
    expect(header).toMatch(VALID_HEADER)
    expect(values(header, 'issuer')).toEqual([value.replace('\ud800', '\ufffd')])
  })

  it('names the signers while the header stays small; past that, none (never a part)', () => {
    const signers = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        id: `signer${i}`,
        issuer: `https://idp-${i}.example.com/realms/x`,
      }))
    const few = bearerChallenge('openziti-primary-ext-jwt', 'invalid', signers(3))
    expect(values(few, 'id')).toEqual(['signer0', 'signer1', 'signer2'])
    const many = bearerChallenge('openziti-primary-ext-jwt', 'invalid', signers(1300))
    expect(many.length).toBeLessThanOrEqual(MAX_CHALLENGE)
    expect(many).toMatch(VALID_HEADER)
    expect(many).toContain('error="invalid"')
    expect(many).not.toContain('id=')
    expect(many).not.toContain('issuer=')
  })

  it('leaves plain values as they are', () => {
    expect(quote('https://login.corp.example/realms/a-b_c?x=1')).toBe(
      'https://login.corp.example/realms/a-b_c?x=1',
    )
  })
})

let cert: TestCert
beforeAll(async () => {
  cert = await makeCert()
})

describe('a refused JWT login whatever the signers hold', () => {
  it('answers 401 without a challenge while no signer is enabled, as upstream', async () => {
    const app = await buildTestApp()
    const call = caller(app, await login(app))
    const res = await call('POST', '/edge/management/v1/external-jwt-signers', {
      name: 'off',
      enabled: false,
      issuer: 'https://off.example',
      audience: 'ziti',
      certPem: cert.certPem,
      kid: 'kid-off',
    })
    expect(res.statusCode).toBe(201)
    for (const authorization of ['Bearer not.a.jwt', undefined]) {
      const refused = await app.inject({
        method: 'POST',
        url: LOGIN,
        headers: authorization ? { authorization } : {},
      })
      expect(refused.statusCode).toBe(401)
      expect(refused.json().error.code).toBe('UNAUTHORIZED')
      expect(refused.headers['www-authenticate']).toBeUndefined()
    }
  })

  it('answers 401 with a valid WWW-Authenticate header over a real socket', async () => {
    const app = await buildTestApp()
    const call = caller(app, await login(app))
    const issuers = ['https://idp.example/😀', 'https://plain']
    // A control character can no longer reach an issuer (issue 29), so it cannot reach the header.
    const refused = await call('POST', '/edge/management/v1/external-jwt-signers', {
      name: 'ctl',
      enabled: true,
      issuer: 'https://idp.example/\u0001ctl',
      audience: 'ziti',
      certPem: (await makeCert()).certPem,
      kid: 'kid-ctl',
    })
    expect(refused.statusCode).toBe(400)
    expect(refused.json().error.cause.field).toBe('issuer')
    for (const [i, issuer] of issuers.entries()) {
      const res = await call('POST', '/edge/management/v1/external-jwt-signers', {
        name: `s${i}`,
        enabled: true,
        issuer,
        audience: 'ziti',
        certPem: i === 0 ? cert.certPem : (await makeCert()).certPem,
        kid: `kid-${i}`,
      })
      expect(res.statusCode).toBe(201)
    }
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo // listening on TCP
    for (const authorization of ['Bearer not.a.jwt', undefined]) {
      const res = await fetch(`http://127.0.0.1:${port}${LOGIN}`, {
        method: 'POST',
        headers: authorization ? { authorization } : {},
      })
      expect(res.status).toBe(401)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED')
      // fetch reads header bytes as Latin-1, as Node wrote them.
      const header = res.headers.get('www-authenticate') ?? ''
      expect(header).toMatch(VALID_HEADER)
      expect(header).toMatch(/^Bearer realm="openziti-primary-ext-jwt" error="(invalid|missing)"/)
      expect(values(header, 'issuer').sort()).toEqual([...issuers].sort())
    }
  })
})
