import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { ADMIN_PASSWORD, ADMIN_USER, buildTestApp } from './helpers/app.js'

function capture() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean))
      done()
    },
  })
  return { lines, stream }
}

describe('request logs', () => {
  it('never contain passwords, session tokens or authorization headers', async () => {
    const { lines, stream } = capture()
    const app = await buildTestApp({ logger: { level: 'trace', stream } })
    const login = await app.inject({
      method: 'POST',
      url: '/edge/management/v1/authenticate?method=password',
      payload: { username: ADMIN_USER, password: ADMIN_PASSWORD },
    })
    const token = login.headers['zt-session'] as string
    const headers = { 'zt-session': token, authorization: 'Bearer header.payload.signature' }
    const base = '/edge/management/v1/external-jwt-signers'
    const created = await app.inject({
      method: 'POST',
      url: base,
      headers,
      payload: {
        name: 's',
        enabled: true,
        issuer: 'i',
        audience: 'a',
        jwksEndpoint: 'https://x.example/j',
      },
    })
    const id = created.json().data.id
    await app.inject({ method: 'GET', url: `${base}/${id}`, headers })
    await app.inject({
      method: 'PATCH',
      url: `${base}/${id}`,
      headers,
      payload: { enabled: false },
    })
    await app.inject({ method: 'DELETE', url: `${base}/${id}`, headers })
    await app.inject({ method: 'GET', url: '/edge/management/v1/current-api-session', headers })
    await app.inject({ method: 'DELETE', url: '/edge/management/v1/current-api-session', headers })
    await app.inject({
      method: 'POST',
      url: '/edge/management/v1/authenticate?method=password',
      payload: { username: ADMIN_USER, password: 'wrong-but-secret-pw' },
    })

    const all = lines.join('\n')
    expect(lines.length).toBeGreaterThan(8)
    for (const secret of [
      ADMIN_PASSWORD,
      'wrong-but-secret-pw',
      token,
      'header.payload.signature',
    ]) {
      expect(all).not.toContain(secret)
    }
    expect(all.toLowerCase()).not.toContain('zt-session":"')
  })

  it('write one line per request, carrying the id that error bodies report', async () => {
    const { lines, stream } = capture()
    const app = await buildTestApp({ logger: { level: 'info', stream } })
    const res = await app.inject({ method: 'GET', url: '/edge/management/v1/external-jwt-signers' })
    const requestId = res.json().error.requestId
    const forRequest = lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === requestId)
    expect(forRequest).toHaveLength(1)
    expect(forRequest[0]).toMatchObject({
      msg: 'request completed',
      statusCode: 401,
      method: 'GET',
    })
  })
})
