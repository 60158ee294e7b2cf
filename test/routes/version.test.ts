import { request as httpRequest } from 'node:http'
import { request } from 'node:https'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import pkg from '../../package.json' with { type: 'json' }
import { buildTestApp } from '../helpers/app.js'
import { makeServerCert } from '../helpers/certs.js'

const PATHS = [
  '/version',
  '/edge/client/v1/version',
  '/edge/management/v1/version',
  '/edge/client/v1/',
  '/edge/management/v1',
]
const C = '/edge/client/v1'
const M = '/edge/management/v1'

describe('version discovery', () => {
  it.each(PATHS)('GET %s answers the version envelope without authentication', async (url) => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url, headers: { host: 'ctrl.example:1280' } })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const base = 'http://ctrl.example:1280'
    expect(res.json()).toEqual({
      data: {
        version: `v${pkg.version}`,
        revision: expect.any(String),
        buildDate: expect.any(String),
        runtimeVersion: process.version,
        capabilities: [],
        apiVersions: {
          edge: { v1: { path: C, apiBaseUrls: [`${base}${C}`] } },
          'edge-client': { v1: { path: C, apiBaseUrls: [`${base}${C}`] } },
          'edge-management': { v1: { path: M, apiBaseUrls: [`${base}${M}`] } },
        },
      },
      meta: {},
    })
  })

  it('never announces OIDC_AUTH, whatever the path', async () => {
    const app = await buildTestApp()
    for (const url of PATHS) {
      const res = await app.inject({ method: 'GET', url })
      expect(res.json().data.capabilities).not.toContain('OIDC_AUTH')
    }
  })

  it('builds apiBaseUrls from the Host header, IPv6 and default ports included', async () => {
    const app = await buildTestApp()
    for (const [host, base] of [
      ['[::1]:1280', 'http://[::1]:1280'],
      ['Ctrl.Example', 'http://ctrl.example'],
      ['ctrl.example:80', 'http://ctrl.example'],
    ]) {
      const res = await app.inject({ method: 'GET', url: '/version', headers: { host } })
      expect(res.json().data.apiVersions['edge-management'].v1.apiBaseUrls).toEqual([`${base}${M}`])
    }
  })

  it.each([
    ['a b', 'the socket address'],
    ['x/y', 'the socket address'],
    ['user@ctrl.example', 'the socket address'],
    ['[nope', 'the socket address'],
    ['', 'the socket address'],
    ['ctrl.example:1', 'http://ctrl.example:1'],
  ])('over a socket, Host %j gives the base %s', async (host, expected) => {
    const app = await buildTestApp()
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo // listening on TCP: an AddressInfo
    const text = await new Promise<string>((resolve, reject) => {
      httpRequest({ host: '127.0.0.1', port, path: '/version', headers: { host } }, (res) => {
        let body = ''
        res.on('data', (d) => {
          body += d
        })
        res.on('end', () => resolve(body))
      })
        .on('error', reject)
        .end()
    })
    expect(JSON.parse(text).data.apiVersions.edge.v1).toEqual({
      path: C,
      apiBaseUrls: [
        `${expected === 'the socket address' ? `http://127.0.0.1:${port}` : expected}${C}`,
      ],
    })
  })

  it('leads a client to the management API: the discovered path logs in', async () => {
    const app = await buildTestApp()
    const version = await app.inject({ method: 'GET', url: '/edge/management/v1/version' })
    const path: string = version.json().data.apiVersions['edge-management'].v1.path
    const login = await app.inject({
      method: 'POST',
      url: `${path}/authenticate?method=password`,
      payload: { username: 'admin', password: 'admin-password-123' },
    })
    expect(login.statusCode).toBe(200)
  })

  it('answers https apiBaseUrls over TLS', async () => {
    const { certPem, keyPem } = await makeServerCert()
    const app = await buildTestApp({
      https: { cert: Buffer.from(certPem), key: Buffer.from(keyPem) },
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo // listening on TCP: an AddressInfo
    const body = await new Promise<string>((resolve, reject) => {
      request(`https://127.0.0.1:${port}/edge/client/v1/version`, { ca: certPem }, (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => resolve(text))
      })
        .on('error', reject)
        .end()
    })
    expect(JSON.parse(body).data.apiVersions['edge-client'].v1.apiBaseUrls).toEqual([
      `https://127.0.0.1:${port}${C}`,
    ])
  })
})
