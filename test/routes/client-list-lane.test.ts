import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it, onTestFinished } from 'vitest'
import { ChangeBus } from '../../src/changes.js'
import { ClientSignerPages } from '../../src/routes/client-signers/pages.js'
import { keptPageLane, Lanes } from '../../src/routes/lanes.js'
import { SignerService } from '../../src/signers/signer-service.js'
import { buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { listedSigner } from '../helpers/signers.js'
import { openTestStore, STORES } from '../helpers/stores.js'
import { type Answer, httpAnswer as get, listen, rawRequest } from '../http/raw-http.js'
import { buildMeteredApp } from '../metrics/scrape.js'

// The default page of the client signer list is answered before Fastify once it is kept
// (src/routes/lanes.ts). Over real HTTP (inject never reaches the lane), these
// check that it answers exactly what the route answers, and that every change shows at once.

const CLIENT = '/edge/client/v1/external-jwt-signers'
const M = '/edge/management/v1/external-jwt-signers'

const names = (a: Answer) => (JSON.parse(a.body).data as { name: string }[]).map((s) => s.name)

async function served(app: FastifyInstance) {
  const port = await listen(app)
  const call = caller(app, await login(app))
  return { port, call }
}

describe.each(STORES)('the client signer list lane on %s', (storeKind) => {
  it('answers the kept default page exactly as the route does: status, headers and body', async () => {
    const app = await buildTestApp({ storeKind })
    const { port, call } = await served(app)
    for (const n of ['one', 'two']) await call('POST', M, listedSigner(n))
    const fromRoute = await get(port, CLIENT) // builds and keeps the page
    const fromLane = await get(port, CLIENT)
    // `?` with nothing after it: the same page, always through the route.
    const again = await get(port, `${CLIENT}?`)
    expect(fromRoute.status).toBe(200)
    expect(names(fromRoute)).toEqual(['one', 'two'])
    expect(fromLane).toEqual(fromRoute)
    expect(again).toEqual(fromRoute)
    const etag = fromRoute.headers.etag as string
    const notModified = await get(port, CLIENT, { 'if-none-match': etag })
    const notModifiedRoute = await get(port, `${CLIENT}?`, { 'if-none-match': etag })
    expect(notModified.status).toBe(304)
    expect(notModified.body).toBe('')
    expect(notModified).toEqual(notModifiedRoute)
    const weak = await get(port, CLIENT, { 'if-none-match': `"x", W/${etag}` })
    expect(weak.status).toBe(304)
    const stale = await get(port, CLIENT, { 'if-none-match': '"not-it"' })
    expect(stale).toEqual(fromRoute)
  })

  it('shows every kind of change in the very next response', async () => {
    const app = await buildTestApp({ storeKind })
    const { port, call } = await served(app)
    const id = (await call('POST', M, listedSigner('alpha'))).json().data.id
    const list = async () => {
      await get(port, CLIENT) // keeps the page (or is already the lane)
      return names(await get(port, CLIENT))
    }
    expect(await list()).toEqual(['alpha'])
    const tag = (await get(port, CLIENT)).headers.etag as string
    await call('PATCH', `${M}/${id}`, { name: 'beta' })
    expect(names(await get(port, CLIENT))).toEqual(['beta'])
    expect((await get(port, CLIENT, { 'if-none-match': tag })).status).toBe(200)
    expect(await list()).toEqual(['beta'])
    await call('PATCH', `${M}/${id}`, { enabled: false })
    expect(names(await get(port, CLIENT))).toEqual([])
    expect(await list()).toEqual([])
    await call('PATCH', `${M}/${id}`, { enabled: true })
    expect(names(await get(port, CLIENT))).toEqual(['beta'])
    await call('PUT', `${M}/${id}`, listedSigner('gamma', { externalAuthUrl: null }))
    expect(names(await get(port, CLIENT))).toEqual([])
    await call('PUT', `${M}/${id}`, listedSigner('gamma'))
    expect(names(await get(port, CLIENT))).toEqual(['gamma'])
    expect(await list()).toEqual(['gamma'])
    const second = (await call('POST', M, listedSigner('delta'))).json().data.id
    expect(names(await get(port, CLIENT))).toEqual(['gamma', 'delta'])
    await call('DELETE', `${M}/${id}`)
    await call('DELETE', `${M}/${second}`)
    expect(names(await get(port, CLIENT))).toEqual([])
  })
})

describe('the client signer list lane', () => {
  it('leaves to the route what only the route answers: queries, HEAD, no Host, errors', async () => {
    const app = await buildTestApp({ storeKind: 'sqlite' })
    const { port, call } = await served(app)
    await call('POST', M, listedSigner('one'))
    await get(port, CLIENT)
    const paged = await get(port, `${CLIENT}?limit=1&offset=1`)
    expect(names(paged)).toEqual([])
    const bad = await get(port, `${CLIENT}?limit=x`)
    expect(bad.status).toBe(400)
    expect(JSON.parse(bad.body).error.code).toBeDefined()
    const head = await get(port, CLIENT, {}, 'HEAD')
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    const noHost = await rawRequest(port, `GET ${CLIENT} HTTP/1.1\r\nConnection: close\r\n\r\n`)
    expect(noHost.status).toBe(400)
    expect(JSON.parse(noHost.body).error.code).toBe('COULD_NOT_PARSE_REQUEST')
  })

  it('answers a trailing or repeated slash as the bare path, through the route, with no redirect', async () => {
    const app = await buildTestApp({ storeKind: 'sqlite' })
    const { port, call } = await served(app)
    await call('POST', M, listedSigner('one'))
    const bare = await get(port, CLIENT)
    expect(names(bare)).toEqual(['one'])
    for (const path of [`${CLIENT}/`, `${CLIENT}//`, '//edge/client/v1//external-jwt-signers']) {
      expect(await get(port, path), path).toEqual(await get(port, CLIENT))
    }
  })

  it('is counted in the metrics as the route is', async () => {
    const s = await buildMeteredApp({ storeKind: 'sqlite' })
    const { port } = await served(s.app)
    const first = await get(port, CLIENT)
    for (let i = 0; i < 4; i++) await get(port, CLIENT)
    await get(port, CLIENT, { 'if-none-match': first.headers.etag as string })
    const scraped = await s.scrape()
    const count = (status: string) =>
      scraped.value('ctrl_http_requests_total', { method: 'GET', route: CLIENT, status })
    expect(count('200')).toBe(5)
    expect(count('304')).toBe(1)
    expect(
      scraped.value('ctrl_http_request_duration_seconds_count', { method: 'GET', route: CLIENT }),
    ).toBe(6)
  })

  it('stays off while successful reads are logged: each request still writes its line', async () => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean))
        done()
      },
    })
    const app = await buildTestApp({ storeKind: 'sqlite', logger: { level: 'debug', stream } })
    const { port } = await served(app)
    for (let i = 0; i < 3; i++) expect((await get(port, CLIENT)).status).toBe(200)
    const completed = lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request completed' && l.url === CLIENT)
    expect(completed).toHaveLength(3)
  })
})

describe('the kept page lane of the client list', () => {
  it('takes exactly the bare GET of a kept, current page, and nothing once a signer changes', async () => {
    const clock = testClock()
    const store = await openTestStore('sqlite')
    const signers = new SignerService({ store, changes: new ChangeBus(), clock })
    const pages = new ClientSignerPages(signers)
    let logsReads = false
    const lanes = new Lanes()
    lanes.add(CLIENT, keptPageLane({ kept: () => pages.keptDefault(), logsReads: () => logsReads }))
    const { lane } = lanes
    // Whatever the lane leaves answers 599 here.
    const server = createServer((req, res) => {
      if (!lane(req, res)) res.writeHead(599).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    onTestFinished(async () => {
      server.close()
      await store.close()
    })
    const port = (server.address() as AddressInfo).port // a TCP listener
    const created = await signers.create(listedSigner('one'))
    expect((await get(port, CLIENT)).status).toBe(599) // nothing kept yet
    const kept = await pages.page({})
    const answer = await get(port, CLIENT)
    expect(answer.status).toBe(200)
    expect(answer.body).toBe(kept.body.toString())
    expect(answer.headers.etag).toBe(kept.etag)
    expect(names(answer)).toEqual(['one'])
    expect((await get(port, CLIENT, { 'if-none-match': kept.etag })).status).toBe(304)
    for (const path of [`${CLIENT}?`, `${CLIENT}?limit=1`, `${CLIENT}/`, `${CLIENT}/x`]) {
      expect((await get(port, path)).status, path).toBe(599)
    }
    expect((await get(port, CLIENT, {}, 'HEAD')).status).toBe(599)
    expect((await get(port, CLIENT, {}, 'POST')).status).toBe(599)
    logsReads = true
    expect((await get(port, CLIENT)).status).toBe(599)
    logsReads = false
    await signers.patch(created.id, { name: 'renamed' })
    expect((await get(port, CLIENT)).status).toBe(599) // the change dropped the kept page
    await pages.page({})
    expect(names(await get(port, CLIENT))).toEqual(['renamed'])
  })
})
