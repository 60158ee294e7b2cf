import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { forEachStore } from '../../helpers/app.js'
import { rulesSetup, SIGNERS } from '../../helpers/token-rules.js'

const RULES = {
  audiences: ['account'],
  claims: [{ claim: '/azp', oneOf: ['ziti-tunnel'], message: 'tunneler only' }],
  maxTokenAge: '1h',
}

forEachStore(() => {
  describe('token rules on the signer resource', () => {
    it('are stored and read back; PUT without them keeps them, null clears them', async () => {
      const s = await rulesSetup(RULES)
      const url = `${SIGNERS}/${s.signerId}`
      expect((await s.call('GET', url)).json().data.tokenRules).toEqual(RULES)
      const body = {
        name: 'idp',
        enabled: true,
        issuer: 'https://idp.rules.example',
        audience: 'ziti',
      }
      const put = await s.call('PUT', url, { ...body, jwksEndpoint: s.server.url })
      expect(put.statusCode).toBe(200)
      expect((await s.call('GET', url)).json().data.tokenRules).toEqual(RULES)
      expect(await s.tryLogin({ aud: 'account', azp: 'ziti-tunnel' })).toBe(200)
      const cleared = await s.call('PUT', url, {
        ...body,
        jwksEndpoint: s.server.url,
        tokenRules: null,
      })
      expect(cleared.statusCode).toBe(200)
      expect((await s.call('GET', url)).json().data.tokenRules).toBeNull()
    })

    it('PATCH merges them member by member; a null member removes it', async () => {
      const s = await rulesSetup(RULES)
      const url = `${SIGNERS}/${s.signerId}`
      const res = await s.call('PATCH', url, {
        tokenRules: { maxTokenLifetime: '10m', maxTokenAge: null },
      })
      expect(res.statusCode).toBe(200)
      expect((await s.call('GET', url)).json().data.tokenRules).toEqual({
        audiences: ['account'],
        claims: RULES.claims,
        maxTokenLifetime: '10m',
      })
      await s.call('PATCH', url, { name: 'renamed' })
      expect((await s.call('GET', url)).json().data.tokenRules).toEqual({
        audiences: ['account'],
        claims: RULES.claims,
        maxTokenLifetime: '10m',
      })
    })

    it('existing signers have none and the client list never shows them', async () => {
      const s = await rulesSetup(null, {
        signer: { externalAuthUrl: 'https://idp.rules.example/a' },
      })
      expect((await s.call('GET', `${SIGNERS}/${s.signerId}`)).json().data.tokenRules).toBeNull()
      await s.call('PATCH', `${SIGNERS}/${s.signerId}`, { tokenRules: RULES })
      const list = await s.app.inject({
        method: 'GET',
        url: '/edge/client/v1/external-jwt-signers',
      })
      expect(list.statusCode).toBe(200)
      expect(list.json().data).toHaveLength(1)
      expect(list.body).not.toContain('tokenRules')
      expect(list.body).not.toContain('tunneler')
    })

    // Every one COULD_NOT_VALIDATE (a wrong JSON type too, as issue 2 specifies), naming the member.
    const invalid: [string, object][] = [
      ['tokenRules.audiences', { audiences: [] }],
      ['tokenRules.audiences[1]', { audiences: ['a', ''] }],
      [
        'tokenRules.claims[2].claim',
        {
          claims: [
            { claim: '/a', exists: true },
            { claim: '/b', exists: true },
            { claim: 'azp', equals: 'x' },
          ],
        },
      ],
      ['tokenRules.claims[0].claim', { claims: [{ claim: '/a~2b', equals: 'x' }] }],
      ['tokenRules.claims[0]', { claims: [{ claim: '/a' }] }],
      ['tokenRules.claims[0]', { claims: [{ claim: '/a', equals: 'x', contains: 'y' }] }],
      ['tokenRules.claims[0].matches', { claims: [{ claim: '/a', matches: 'abc\\' }] }],
      ['tokenRules.claims[0].oneOf', { claims: [{ claim: '/a', oneOf: [] }] }],
      ['tokenRules.claims[0].equals', { claims: [{ claim: '/a', equals: { x: 1 } }] }],
      ['tokenRules.claims[0].regex', { claims: [{ claim: '/a', regex: '.*' }] }],
      [
        'tokenRules.claims',
        { claims: Array.from({ length: 33 }, () => ({ claim: '/a', exists: true })) },
      ],
      ['tokenRules.maxTokenLifetime', { maxTokenLifetime: 'ten minutes' }],
      ['tokenRules.maxTokenAge', { maxTokenAge: '-5m' }],
      ['tokenRules.clockSkew', { clockSkew: '6m' }],
      ['tokenRules.sessionEndsWithToken', { sessionEndsWithToken: 'yes' }],
      ['tokenRules.bogus', { bogus: 1 }],
    ]
    it('refuses each bad member with 400 naming it, on create, PUT and PATCH', async () => {
      const s = await rulesSetup(null)
      const url = `${SIGNERS}/${s.signerId}`
      const body = {
        name: 'other',
        enabled: true,
        issuer: 'https://other.example',
        audience: 'ziti',
        jwksEndpoint: s.server.url,
      }
      for (const [field, tokenRules] of invalid) {
        for (const res of [
          await s.call('POST', SIGNERS, { ...body, tokenRules }),
          await s.call('PUT', url, { ...body, tokenRules }),
          await s.call('PATCH', url, { tokenRules }),
        ]) {
          expect(res.statusCode, `${field} ${JSON.stringify(tokenRules)}`).toBe(400)
          expect(res.json().error.code, field).toBe('COULD_NOT_VALIDATE')
          expect(res.json().error.cause.field, JSON.stringify(tokenRules)).toBe(field)
        }
      }
      expect((await s.call('GET', url)).json().data.tokenRules).toBeNull()
    })

    it('logs the refusal kind of a rule but never the token', async () => {
      const lines: string[] = []
      const stream = new Writable({
        write(chunk, _enc, done) {
          lines.push(chunk.toString())
          done()
        },
      })
      const s = await rulesSetup(RULES, { app: { logger: { level: 'trace', stream } } })
      const jwt = await s.token({ aud: 'account', azp: 'grafana' })
      expect((await s.loginWith(jwt)).statusCode).toBe(401)
      await s.explain(jwt)
      const all = lines.join('\n')
      expect(all).toContain('"kind":"claim_condition"')
      expect(all).not.toContain(jwt)
      expect(all).not.toContain(jwt.split('.')[2])
    })
  })
})
