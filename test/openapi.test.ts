import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { buildTestApp } from './helpers/app.js'

describe('openapi.yaml', () => {
  it('matches the route schemas (run `npm run openapi` after changing a route)', async () => {
    const app = await buildTestApp()
    const committed = readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')
    expect(app.swagger({ yaml: true })).toBe(committed)
  })

  it('is served without authentication and describes every route', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/openapi.yaml' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toContain('yaml')
    const doc = parse(res.body) as { paths: Record<string, object> }
    for (const path of [
      '/edge/management/v1/external-jwt-signers',
      '/edge/management/v1/external-jwt-signers/{id}',
      '/edge/management/v1/ext-jwt-signers',
      '/edge/management/v1/identity-role-attributes',
      '/edge/management/v1/summary',
      '/edge/management/v1/authenticate',
      '/edge/management/v1/current-api-session',
      '/edge/client/v1/external-jwt-signers',
      '/health-checks',
    ]) {
      expect(Object.keys(doc.paths)).toContain(path)
    }
  })
})
