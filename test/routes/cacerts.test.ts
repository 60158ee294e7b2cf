import 'reflect-metadata'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { X509Certificate, X509Certificates } from '@peculiar/x509'
import { describe, expect, it, onTestFinished } from 'vitest'
import { buildTestApp } from '../helpers/app.js'
import { makeCert, makeServerCert } from '../helpers/certs.js'

const URL_PATH = '/.well-known/est/cacerts'

/** The certificates of a base64 PKCS#7 answer, as DER in base64, read by @peculiar/x509. */
const certsOf = (body: string) => [...new X509Certificates(body)].map((c) => c.toString('base64'))
const der = (pem: string) => new X509Certificate(pem).toString('base64')

/** The same answer read by OpenSSL, an independent PKCS#7 parser: the PEM blocks it prints. */
function opensslCerts(body: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'cacerts-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'cacerts.p7')
  writeFileSync(file, Buffer.from(body, 'base64'))
  const out = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-in', file, '-print_certs'], {
    encoding: 'utf8',
  })
  return (out.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).map(der)
}

async function tlsApp(caPem?: string) {
  const server = await makeServerCert()
  const app = await buildTestApp({
    https: { cert: Buffer.from(server.certPem), key: Buffer.from(server.keyPem) },
    ...(caPem === undefined ? {} : { caPem }),
  })
  return { app, server }
}

describe('GET /.well-known/est/cacerts', () => {
  it('answers the chain of CTRL_TLS_CERT as base64 PKCS#7 over HTTPS, without authentication', async () => {
    const { app, server } = await tlsApp()
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo // listening on TCP: an AddressInfo
    const res = await new Promise<{ status: number; type: string; body: string }>(
      (resolve, reject) => {
        request(`https://127.0.0.1:${port}${URL_PATH}`, { ca: server.certPem }, (r) => {
          let body = ''
          r.on('data', (d) => {
            body += d
          })
          r.on('end', () =>
            resolve({ status: r.statusCode ?? 0, type: r.headers['content-type'] ?? '', body }),
          )
        })
          .on('error', reject)
          .end()
      },
    )
    expect(res.status).toBe(200)
    expect(res.type).toMatch(/^application\/pkcs7-mime/)
    expect(res.body).toMatch(/^[A-Za-z0-9+/]+=*$/)
    expect(certsOf(res.body)).toEqual([der(server.certPem)])
    expect(opensslCerts(res.body)).toEqual([der(server.certPem)])
  })

  it('answers every certificate of a CTRL_TLS_CA bundle, in order', async () => {
    const root = await makeCert({ cn: 'root ca' })
    const intermediate = await makeCert({ cn: 'intermediate ca', kind: 'ES256' })
    const bundle = `# comments and blank lines around the blocks are fine\n${intermediate.certPem}\n${root.certPem}`
    const { app } = await tlsApp(bundle)
    const res = await app.inject({ method: 'GET', url: URL_PATH })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/pkcs7-mime/)
    const expected = [der(intermediate.certPem), der(root.certPem)]
    expect(certsOf(res.body)).toEqual(expected)
    expect(opensslCerts(res.body)).toEqual(expected)
  })

  it('answers 404 NOT_FOUND in the error envelope over plain HTTP', async () => {
    const app = await buildTestApp()
    const res = await app.inject({ method: 'GET', url: URL_PATH })
    expect(res.statusCode).toBe(404)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(res.json()).toMatchObject({
      error: { code: 'NOT_FOUND', requestId: expect.any(String) },
      meta: { apiVersion: expect.any(String), apiEnrollmentVersion: expect.any(String) },
    })
  })

  it.each([
    ['no certificate', 'just text'],
    ['a private key only', '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n'],
    [
      'a broken certificate',
      '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n',
    ],
  ])('refuses to build with a CA bundle holding %s', async (_what, caPem) => {
    await expect(tlsApp(caPem)).rejects.toThrow(/certificate/)
  })
})
