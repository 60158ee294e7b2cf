import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { loggedUrl } from '../src/request-logger.js'
import { ADMIN_PASSWORD, ADMIN_USER, buildTestApp, login } from './helpers/app.js'
import { listen, rawExchange, rawRequest } from './http/raw-http.js'

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

function isByte(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 255
}

/**
 * Every string a log line carries, with byte arrays decoded: Node's client errors hold the raw
 * request as a JSON array of numbers (or a `{type: 'Buffer', data}`), where a plain text search
 * would never find a token.
 */
function searchable(lines: string[]): string {
  const out: string[] = []
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v)
    else if (Array.isArray(v)) {
      if (v.length > 0 && v.every(isByte)) out.push(Buffer.from(v).toString('latin1'))
      else v.forEach(walk)
    } else if (v !== null && typeof v === 'object') {
      for (const [key, value] of Object.entries(v)) {
        out.push(key)
        walk(value)
      }
    }
  }
  for (const line of lines) {
    out.push(line)
    walk(JSON.parse(line))
  }
  return out.join('\n')
}

function expectNoSecret(lines: string[], secrets: string[]) {
  const all = searchable(lines)
  for (const secret of secrets) expect(all).not.toContain(secret)
  expect(all.toLowerCase()).not.toContain('zt-session":"')
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
    const sessionId = login.json().data.id as string
    expect(token.startsWith(sessionId)).toBe(true)
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

    expect(lines.length).toBeGreaterThan(8)
    expectNoSecret(lines, [
      ADMIN_PASSWORD,
      'wrong-but-secret-pw',
      token,
      sessionId,
      'header.payload.signature',
    ])
    // The login and the logout name the session by the same digest.
    const digest = createHash('sha256').update(sessionId).digest('hex').slice(0, 16)
    const audited = lines.map((l) => JSON.parse(l)).filter((l) => l.entityType === 'api-sessions')
    expect(audited.map((l) => [l.action, l.sessionDigest])).toEqual([
      ['login', digest],
      ['logout', digest],
    ])
  })

  it('never contain credentials a client put in the query string', async () => {
    const { lines, stream } = capture()
    const app = await buildTestApp({ logger: { level: 'trace', stream } })
    const urls = [
      // OpenZiti's enrollment of one-time tokens, which this controller does not serve (404).
      '/edge/client/v1/enroll?method=ott&token=ott-secret-0001',
      // Refused logins and reads (401).
      '/edge/client/v1/authenticate?method=ext-jwt&access_token=jwt-secret-0002',
      '/edge/management/v1/external-jwt-signers?limit=5&jwt-secret-0003',
      '/edge/management/v1/identities?%E0%A4%A=bad-encoding-secret-0004',
      // A path Fastify cannot decode: logged by the routing error handler.
      '/edge/client/v1/%ZZ?token=undecodable-path-secret-0005',
    ]
    const statuses = []
    for (const url of urls) statuses.push((await app.inject({ method: 'POST', url })).statusCode)
    expect(statuses.every((s) => s >= 400 && s < 500)).toBe(true)
    expectNoSecret(lines, ['ott-secret', 'jwt-secret', 'secret-0004', 'secret-0005'])
    const logged = lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request completed')
      .map((l) => l.url)
    // The API's own parameters stay, for the operator reading why a request failed.
    expect(logged).toContain('/edge/client/v1/authenticate?method=ext-jwt&[redacted]')
    expect(logged).toContain('/edge/management/v1/external-jwt-signers?limit=5&[redacted]')
    expect(logged).toHaveLength(urls.length)
  })

  it('keep the list and login parameters of a URL and nothing else of its query', () => {
    expect(loggedUrl('/edge/management/v1/identities')).toBe('/edge/management/v1/identities')
    expect(loggedUrl('/x?filter=name%3D%22a%22&sort=name&limit=2&offset=4&method=password')).toBe(
      '/x?filter=name%3D%22a%22&sort=name&limit=2&offset=4&method=password',
    )
    expect(loggedUrl('/x?token=abc&method=ott&=v&&secret')).toBe(
      '/x?[redacted]&method=ott&[redacted]&[redacted]&[redacted]',
    )
    expect(loggedUrl('/x?%6Dethod=password&limit+=1')).toBe('/x?%6Dethod=password&[redacted]')
    expect(loggedUrl('/x?')).toBe('/x?[redacted]')
  })

  it('decode byte arrays before searching (the search finds a secret hidden in one)', () => {
    const bytes = [...Buffer.from('zt-session: hidden-secret')]
    const lines = [JSON.stringify({ err: { rawPacket: { type: 'Buffer', data: bytes } } })]
    lines.push(JSON.stringify({ raw: bytes }))
    expect(searchable(lines.slice(0, 1))).toContain('hidden-secret')
    expect(searchable(lines.slice(1))).toContain('hidden-secret')
  })

  it('never contain secrets of requests that fail HTTP parsing, at trace level', async () => {
    const { lines, stream } = capture()
    const app = await buildTestApp({ logger: { level: 'trace', stream } })
    const token = await login(app)
    const port = await listen(app)
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzZWNyZXQtc3ViIn0.c2VjcmV0LXNpZ25hdHVyZQ'
    const password = 'password-in-a-broken-body'
    const login_ =
      'POST /edge/management/v1/authenticate?method=password HTTP/1.1\r\nHost: localhost\r\n'
    const body = JSON.stringify({ username: ADMIN_USER, password })
    const answers = await Promise.all([
      // A head over 16 KiB carrying a session token and a bearer JWT.
      rawRequest(
        port,
        `GET /edge/management/v1/identities HTTP/1.1\r\nHost: localhost\r\nzt-session: ${token}\r\n` +
          `Authorization: Bearer ${jwt}\r\nX-Pad: ${'p'.repeat(20_000)}\r\n\r\n`,
      ),
      // A password login whose Content-Length is not a number.
      rawRequest(
        port,
        `${login_}Content-Type: application/json\r\nContent-Length: abc\r\n\r\n${body}`,
      ),
      // Malformed after the secrets: a header line without a colon.
      rawRequest(
        port,
        `POST /edge/client/v1/authenticate?method=ext-jwt HTTP/1.1\r\nHost: localhost\r\n` +
          `Authorization: Bearer ${jwt}\r\nzt-session: ${token}\r\nno colon here\r\n\r\n`,
      ),
      // A body sent in two parts with a broken chunk size after the password.
      rawExchange(port, (socket) => {
        socket.write(
          `${login_}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
        )
        socket.write(`${body.length.toString(16)}\r\n${body}\r\nzz\r\n\r\n`)
      }),
    ])
    expect(answers.map((a) => a.status)).toEqual([431, 400, 400, 400])
    expect(lines.some((l) => l.includes('client error'))).toBe(true)
    expectNoSecret(lines, [ADMIN_PASSWORD, password, token, jwt, 'c2VjcmV0LXNpZ25hdHVyZQ'])
  })

  it('redact the raw bytes of a parse error that some code logs whole', async () => {
    const { lines, stream } = capture()
    const app = await buildTestApp({ logger: { level: 'trace', stream } })
    const err = Object.assign(new Error('Parse Error'), {
      code: 'HPE_INVALID_METHOD',
      rawPacket: Buffer.from('GE T / HTTP/1.1\r\nzt-session: raw-session-secret\r\n'),
    })
    app.log.trace({ err }, 'client error')
    expect(lines.some((l) => l.includes('HPE_INVALID_METHOD'))).toBe(true)
    expectNoSecret(lines, ['raw-session-secret'])
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
