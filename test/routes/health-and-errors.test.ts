import { describe, expect, it, vi } from 'vitest'
import { SignerRepository } from '../../src/store/sqlite/signer-repository.js'
import { buildTestApp, login } from '../helpers/app.js'
import { openTestStore } from '../helpers/stores.js'

describe('health checks', () => {
  it('answers 200 healthy while the store answers', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/health-checks' })
    expect(res.statusCode).toBe(200)
    expect(res.json().data.healthy).toBe(true)
    expect(res.json().data.checks[0]).toMatchObject({ id: 'store', healthy: true })
  })

  it('answers 503 unhealthy when the store does not', async () => {
    const store = await openTestStore('sqlite')
    const app = await buildTestApp({ store })
    await store.close()
    const res = await app.inject({ method: 'GET', url: '/health-checks' })
    expect(res.statusCode).toBe(503)
    expect(res.json().data).toMatchObject({
      healthy: false,
      checks: [{ id: 'store', healthy: false }],
    })
  })
})

describe('error envelope', () => {
  it('answers unknown routes with 404 NOT_FOUND in the envelope', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: '/edge/management/v1/nothing-here' })
    expect(res.statusCode).toBe(404)
    const body = res.json()
    expect(body.error.code).toBe('NOT_FOUND')
    expect(typeof body.error.requestId).toBe('string')
    expect(body.meta).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' })
  })

  it('answers a verb a path does not take with 405 METHOD_NOT_ALLOWED naming the ones it does', async () => {
    const app = await buildTestApp()
    const session = await login(app)
    for (const [method, url, allow] of [
      ['PUT', '/edge/management/v1/ext-jwt-signers', 'GET, HEAD, POST'],
      ['DELETE', '/edge/management/v1/external-jwt-signers//', 'GET, HEAD, POST'],
      ['POST', '/edge/management/v1/ext-jwt-signers/some-id', 'DELETE, GET, HEAD, PATCH, PUT'],
      ['DELETE', '/edge/client/v1/external-jwt-signers?limit=5', 'GET, HEAD'],
    ] as const) {
      const res = await app.inject({ method, url, headers: { 'zt-session': session } })
      expect(res.statusCode, `${method} ${url}`).toBe(405)
      expect(res.json().error.code).toBe('METHOD_NOT_ALLOWED')
      expect(res.headers.allow, `${method} ${url}`).toBe(allow)
    }
    // A path no route has stays 404, whatever the verb.
    const none = await app.inject({ method: 'PUT', url: '/edge/management/v1/nothing-here' })
    expect(none.statusCode).toBe(404)
  })

  it('turns an unexpected failure into 500 UNHANDLED without internal text', async () => {
    const app = await buildTestApp()
    const token = await login(app)
    const spy = vi.spyOn(SignerRepository.prototype, 'list').mockImplementation(() => {
      throw new Error('SQLITE_IOERR: disk at /var/secret failed')
    })
    try {
      const res = await app.inject({
        method: 'GET',
        url: '/edge/management/v1/external-jwt-signers',
        headers: { 'zt-session': token },
      })
      expect(res.statusCode).toBe(500)
      expect(res.json().error.code).toBe('UNHANDLED')
      expect(res.body).not.toContain('secret')
      expect(res.body).not.toContain('SQLITE')
    } finally {
      spy.mockRestore()
    }
  })
})
