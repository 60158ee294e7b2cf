import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers/app.js'
import { listen, rawRequest } from './raw-http.js'

const SIGNERS = '/edge/management/v1/ext-jwt-signers'
const META = { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' }

function get(path: string, headers = 'Host: localhost\r\n'): string {
  return `GET ${path} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`
}

/** The edge envelope, with a request id, and nothing of Fastify's own error body. */
function expectEnvelope(body: string, code: string) {
  const json = JSON.parse(body)
  expect(json).toEqual({
    error: expect.objectContaining({ code, message: expect.any(String) }),
    meta: META,
  })
  expect(json.error.requestId).toMatch(/^\S+$/)
  expect(body).not.toContain('FST_')
  expect(body).not.toContain('statusCode')
  return json
}

describe('requests Fastify or Node refuse before any route', () => {
  it.each([
    ['%', `${SIGNERS}/%`],
    ['%zz', `${SIGNERS}/%zz`],
    ['%FF', `${SIGNERS}/%FF`],
    ['% on the client list', '/edge/client/v1/external-jwt-signers/%zz'],
  ])('answers an undecodable path (%s) with 400 INVALID_PATH', async (_name, path) => {
    const app = await buildTestApp()
    const res = await rawRequest(await listen(app), get(path))
    expect(res.status).toBe(400)
    expect(res.headers.toLowerCase()).toContain('content-type: application/json')
    expect(expectEnvelope(res.body, 'INVALID_PATH').error.cause.field).toBe('path')
  })

  it('answers an id over the parameter length with 414 REQUEST_URI_TOO_LONG', async () => {
    const app = await buildTestApp()
    const res = await rawRequest(await listen(app), get(`${SIGNERS}/${'a'.repeat(101)}`))
    expect(res.status).toBe(414)
    expect(expectEnvelope(res.body, 'REQUEST_URI_TOO_LONG').error.cause.field).toBe('path')
  })

  it('answers the same through inject, so every test app sees it', async () => {
    const app = await buildTestApp()
    const bad = await app.inject({ method: 'GET', url: `${SIGNERS}/%zz` })
    expect(bad.statusCode).toBe(400)
    expectEnvelope(bad.body, 'INVALID_PATH')
    const long = await app.inject({ method: 'DELETE', url: `${SIGNERS}/${'x'.repeat(300)}` })
    expect(long.statusCode).toBe(414)
    expectEnvelope(long.body, 'REQUEST_URI_TOO_LONG')
  })

  it.each([
    ['a method with a space', 'GE T / HTTP/1.1\r\nHost: localhost\r\n\r\n'],
    ['a garbage request line', '\x00\x01\x02 nonsense\r\n\r\n'],
    ['a header without a colon', 'GET / HTTP/1.1\r\nHost: localhost\r\nbroken\r\n\r\n'],
    [
      'a non-numeric Content-Length',
      'POST /edge/management/v1/authenticate?method=password HTTP/1.1\r\nHost: localhost\r\n' +
        'Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
    ],
  ])('answers malformed HTTP (%s) with 400 COULD_NOT_PARSE_REQUEST and closes', async (_n, raw) => {
    const app = await buildTestApp()
    const res = await rawRequest(await listen(app), raw)
    expect(res.status).toBe(400)
    expect(res.headers).toContain('Connection: close')
    expectEnvelope(res.body, 'COULD_NOT_PARSE_REQUEST')
  })

  it('answers a request head over 16 KiB with 431 REQUEST_HEADER_TOO_LARGE', async () => {
    const app = await buildTestApp()
    const res = await rawRequest(
      await listen(app),
      get('/health-checks', `Host: localhost\r\nX-Pad: ${'p'.repeat(20_000)}\r\n`),
    )
    expect(res.status).toBe(431)
    expectEnvelope(res.body, 'REQUEST_HEADER_TOO_LARGE')
  })

  it('answers an HTTP/1.1 request without Host with 400 COULD_NOT_PARSE_REQUEST naming host', async () => {
    const app = await buildTestApp()
    const res = await rawRequest(await listen(app), get('/health-checks', ''))
    expect(res.status).toBe(400)
    expect(expectEnvelope(res.body, 'COULD_NOT_PARSE_REQUEST').error.cause.field).toBe('host')
  })

  it('still serves HTTP/1.0 without Host, and HTTP/1.1 with it', async () => {
    const app = await buildTestApp()
    const port = await listen(app)
    const old = await rawRequest(port, 'GET /health-checks HTTP/1.0\r\n\r\n')
    expect(old.body).toContain('"healthy":true')
    const current = await rawRequest(port, get('/health-checks'))
    expect(current.status).toBe(200)
  })
})
