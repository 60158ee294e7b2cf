import { beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { JwtRejected, REFUSAL_KINDS } from '../../src/jwt/verify.js'
import { createServices } from '../../src/services.js'
import { loopbackOnlyResolver, testClock, testConfig } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt, unsignedJwt } from '../helpers/jwt.js'
import { openTestStore } from '../helpers/stores.js'

const ISSUER = 'https://idp.kinds.example'
const RULED = 'https://ruled.kinds.example'
const NOW = new Date('2026-11-22T08:00:00.000Z')
const T = Math.floor(NOW.getTime() / 1000)

let cert: TestCert
let stranger: TestCert
beforeAll(async () => {
  ;[cert, stranger] = await Promise.all([makeCert(), makeCert()])
})

/** The real services on a fresh in-memory store, without Fastify: one signer, three identities. */
async function setup() {
  const store = await openTestStore('sqlite')
  onTestFinished(() => store.close())
  const log = { info: () => {}, warn: () => {}, error: () => {} }
  const services = await createServices({
    store,
    config: testConfig(),
    clock: testClock(NOW.toISOString()),
    log,
    resolver: loopbackOnlyResolver,
  })
  const signer = await services.signers.create({
    name: 'kinds',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: cert.certPem,
    kid: 'k1',
  })
  // A signer with token rules, for the kinds only rules give.
  await services.signers.create({
    name: 'ruled',
    enabled: true,
    issuer: RULED,
    audience: 'ziti',
    certPem: stranger.certPem,
    kid: 'k-ruled',
    tokenRules: {
      maxTokenLifetime: '1h',
      maxTokenAge: '10m',
      claims: [{ claim: '/azp', equals: 'ziti' }],
    },
  })
  const alice = await services.identities.create({ name: 'alice' })
  const bob = await services.identities.create({ name: 'bob', disabled: true })
  const noJwt = await services.policies.create({
    name: 'password only',
    primary: {
      cert: { allowed: false },
      updb: { allowed: true },
      extJwt: { allowed: false, allowedSigners: [] },
    },
    secondary: { requireTotp: false, requireExtJwtSigner: null },
  })
  const carol = await services.identities.create({ name: 'carol', authPolicyId: noJwt.id })
  return {
    ids: { alice: alice.id, bob: bob.id, carol: carol.id, signer: signer.id },
    async refusal(tokens: string[]): Promise<JwtRejected> {
      try {
        await services.verifier.authenticate(tokens)
      } catch (err) {
        if (err instanceof JwtRejected) return err
        throw err
      }
      throw new Error('the token was accepted')
    },
    async accepted(token: string) {
      return (await services.verifier.authenticate([token])).identity.id
    },
    close: async () => {
      await services.close()
    },
  }
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

/** A token of the signer with token rules. */
const ruled = (claims: Record<string, unknown>) =>
  sign({ iss: RULED, ...claims }, { kid: 'k-ruled', key: stranger })

describe('refusal kinds', () => {
  it('labels every refusal with one stable kind, and keeps the precise reason', async () => {
    const s = await setup()
    const { alice, bob, carol } = s.ids
    const cases: [string[], string, string, string][] = [
      [[], 'missing', 'missing', 'no bearer token'],
      [['not-a-jwt'], 'malformed', 'invalid', 'not a compact JWS'],
      [
        [unsignedJwt({ iss: ISSUER, sub: alice }, { kid: 'k1' })],
        'bad_signature',
        'invalid',
        'algorithm not allowed',
      ],
      [
        [await sign({ sub: alice, iss: 'https://nobody.example' })],
        'unknown_issuer',
        'invalid',
        'no enabled signer has this issuer',
      ],
      [
        [await sign({ sub: alice }, { kid: 'k2' })],
        'unknown_kid',
        'invalid',
        'kid does not match the signer',
      ],
      [
        [await sign({ sub: alice }, { key: stranger })],
        'bad_signature',
        'invalid',
        'signature does not verify',
      ],
      [[await sign({ sub: alice, exp: T - 3600 })], 'expired', 'expired', 'token expired'],
      [
        [await sign({ sub: alice, nbf: T + 3600 })],
        'expired',
        'invalid',
        'token not yet valid (nbf)',
      ],
      [[await sign({ sub: alice, aud: 'other' })], 'audience', 'invalid', 'audience mismatch'],
      [[await sign({ sub: 'nobody' })], 'no_identity', 'invalid', 'no identity with that id'],
      [[await sign({ sub: bob })], 'identity_disabled', 'invalid', 'identity is disabled'],
      [[await sign({ sub: carol })], 'policy', 'invalid', 'policy does not allow JWT login'],
      [
        [await ruled({ sub: alice, iat: T, exp: T + 7200, azp: 'ziti' })],
        'token_lifetime',
        'invalid',
        'exp - iat exceeds maxTokenLifetime',
      ],
      [
        [await ruled({ sub: alice, iat: T - 1200, exp: T + 60, azp: 'ziti' })],
        'token_age',
        'invalid',
        'token is older than maxTokenAge',
      ],
      [
        [await ruled({ sub: alice, azp: 'other', exp: T + 60 })],
        'claim_condition',
        'invalid',
        'claim condition /azp equals not met',
      ],
    ]
    const seen = new Set<string>()
    for (const [tokens, kind, error, reason] of cases) {
      const refused = await s.refusal(tokens)
      expect({ kind: refused.kind, error: refused.error, reason: refused.reason }).toEqual({
        kind,
        error,
        reason,
      })
      seen.add(refused.kind)
    }
    expect([...seen].sort()).toEqual([...REFUSAL_KINDS].sort())
    expect(await s.accepted(await sign({ sub: alice }))).toBe(alice)
    await s.close()
  })

  it('reads the header and the claims set as strictly as jose, before anything else', async () => {
    const s = await setup()
    const [header, , signature] = (await sign({ sub: s.ids.alice })).split('.') as [
      string,
      string,
      string,
    ]
    const b64 = (bytes: Buffer) => bytes.toString('base64url')
    // JSON text of a whole number of base64 groups (a multiple of three bytes).
    const whole = (json: string) => Buffer.from(json.padEnd(Math.ceil(json.length / 3) * 3, ' '))
    const claims = JSON.stringify({ iss: ISSUER, aud: 'ziti', sub: s.ids.alice, exp: T + 600 })
    const headerJson = Buffer.from(header, 'base64url').toString()
    // The JSON object with one more member, a string holding the byte 0xff (never UTF-8).
    const notUtf8 = (json: string) =>
      Buffer.concat([
        Buffer.from(`${json.slice(0, -1)},"x":"`),
        Buffer.from([0xff]),
        Buffer.from('"}'),
      ])
    for (const token of [
      // A byte that is not UTF-8 in a string of the claims set, or of the header.
      `${header}.${b64(notUtf8(claims))}.${signature}`,
      `${b64(notUtf8(headerJson))}.${b64(Buffer.from(claims))}.${signature}`,
      // One character past a whole group of four: not base64 (Node's decoder would drop it).
      `${header}.${b64(whole(claims))}A.${signature}`,
      `${b64(whole(headerJson))}A.${b64(Buffer.from(claims))}.${signature}`,
      // JSON that is not an object.
      `${header}.${b64(Buffer.from(`[${claims}]`))}.${signature}`,
    ]) {
      const refused = await s.refusal([token])
      expect({ kind: refused.kind, reason: refused.reason }, token).toEqual({
        kind: 'malformed',
        reason: 'malformed token',
      })
    }
    await s.close()
  })

  it('labels a token without exp or kid as malformed', async () => {
    const s = await setup()
    const noExp = await sign({ sub: s.ids.alice, exp: undefined })
    const noKid = await signJwt(cert.privateKey, { iss: ISSUER, aud: 'ziti', sub: s.ids.alice })
    expect((await s.refusal([noExp])).kind).toBe('malformed')
    expect((await s.refusal([noKid])).kind).toBe('malformed')
    await s.close()
  })
})
