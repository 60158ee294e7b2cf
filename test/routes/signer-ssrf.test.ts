import { describe, expect, it } from 'vitest'
import { buildTestApp, caller, forEachStore, login } from '../helpers/app.js'

const SIGNERS = '/edge/management/v1/external-jwt-signers'

const body = (jwksEndpoint: string) => ({
  name: 'corp',
  enabled: true,
  issuer: 'https://login.corp.example',
  audience: 'ziti',
  jwksEndpoint,
})

forEachStore(() => {
  describe('signer URLs (finding: SSRF ranges)', () => {
    it('refuses a jwksEndpoint with user info at create, PUT and PATCH, storing nothing', async () => {
      const asked: string[] = []
      const app = await buildTestApp({
        resolver: async (hostname: string) => {
          asked.push(hostname)
          throw new Error('tests resolve no names')
        },
      })
      const call = caller(app, await login(app))
      for (const url of [
        'https://user:secret@login.corp.example/jwks',
        'https://user@login.corp.example/jwks',
      ]) {
        const res = await call('POST', SIGNERS, body(url))
        expect(res.statusCode).toBe(400)
        expect(res.json().error.cause.field).toBe('jwksEndpoint')
      }
      const created = await call('POST', SIGNERS, {
        ...body('https://login.corp.example/jwks'),
        enabled: false,
      })
      expect(created.statusCode).toBe(201)
      const id = created.json().data.id as string
      const withUser = 'https://a:b@login.corp.example/jwks'
      const put = await call('PUT', `${SIGNERS}/${id}`, body(withUser))
      expect(put.statusCode).toBe(400)
      expect(put.json().error.cause.field).toBe('jwksEndpoint')
      const patch = await call('PATCH', `${SIGNERS}/${id}`, { jwksEndpoint: withUser })
      expect(patch.statusCode).toBe(400)
      expect(patch.json().error.cause.field).toBe('jwksEndpoint')
      const stored = await call('GET', `${SIGNERS}/${id}`)
      expect(stored.json().data.jwksEndpoint).toBe('https://login.corp.example/jwks')
      // The signer is disabled and every refused URL was refused before any lookup.
      expect(asked).toEqual([])
    })

    it.each([
      'http://100.100.100.200/jwks',
      'http://[64:ff9b::a9fe:a9fe]/jwks',
      'http://[2002:a9fe:a9fe::]/jwks',
      'http://[::ffff:0:a9fe:a9fe]/jwks',
      'http://[::a9fe:a9fe]/jwks',
    ])('refuses the metadata address %s at create', async (url) => {
      const app = await buildTestApp()
      const call = caller(app, await login(app))
      const res = await call('POST', SIGNERS, body(url))
      expect(res.statusCode).toBe(400)
      expect(res.json().error.cause).toMatchObject({ field: 'jwksEndpoint' })
      expect(res.json().error.cause.reason).toMatch(/never fetched from/)
    })
  })
})
