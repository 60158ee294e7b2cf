import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers/app.js'
import { type RunningProvider, startOidcProvider } from '../helpers/oidc-provider.js'
import { buildMeteredApp } from '../metrics/scrape.js'
import { enroll, enrollmentSigner, USERS } from './fixture.js'

let provider: RunningProvider
beforeAll(async () => {
  provider = await startOidcProvider(Object.keys(USERS), (clientId) => USERS[clientId] ?? {})
})
afterAll(() => provider.close())

describe('enrollment observability', () => {
  it('counts every attempt in ctrl_enrollments_total by method, result and reason', async () => {
    const { app, scrape } = await buildMeteredApp()
    await enrollmentSigner(app, provider)
    await enroll(app, [await provider.accessToken('alice')])
    await enroll(app, [await provider.accessToken('alice')])
    await enroll(app, [await provider.accessToken('dave')])
    await enroll(app, ['x.y.z'])
    await enroll(app, [await provider.accessToken('bob')], { clientCsr: 'x' })
    const s = await scrape()
    const value = (method: string, result: string, reason: string) =>
      s.value('ctrl_enrollments_total', { method, result, reason })
    expect(value('token', 'success', 'none')).toBe(1)
    expect(value('token', 'failure', 'already_enrolled')).toBe(1)
    expect(value('token', 'failure', 'claims')).toBe(1)
    expect(value('token', 'failure', 'malformed')).toBe(1)
    expect(value('cert', 'failure', 'not_allowed')).toBe(1)
  })

  it('never logs a token, and logs why an enrollment was refused', async () => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean))
        done()
      },
    })
    const app = await buildTestApp({ logger: { level: 'trace', stream } })
    await enrollmentSigner(app, provider)
    const tokens = await Promise.all(['alice', 'alice', 'dave'].map((u) => provider.accessToken(u)))
    for (const token of tokens) await enroll(app, [token])
    const text = lines.join('\n')
    for (const token of tokens) {
      for (const part of token.split('.')) expect(text).not.toContain(part)
    }
    expect(
      lines.filter((l) => l.includes('enrollment refused')).map((l) => JSON.parse(l).kind),
    ).toEqual(['already_enrolled', 'claims'])
  })

  it('keeps a major version the C SDK accepts for enrollment (0, or 2 and above)', async () => {
    const app = await buildTestApp()
    const version: string = (await app.inject({ method: 'GET', url: '/version' })).json().data
      .version
    const major = Number(/^v(\d+)\./.exec(version)?.[1])
    expect(major === 0 || major >= 2, version).toBe(true)
  })
})
