import 'reflect-metadata'
import { createPublicKey, webcrypto, X509Certificate } from 'node:crypto'
import * as x509 from '@peculiar/x509'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EnrollmentCa } from '../../src/enrollment/enrollment-ca.js'
import { buildTestApp, forEachStore } from '../helpers/app.js'
import { makeServerCert } from '../helpers/certs.js' // also sets @peculiar/x509's crypto provider
import { type RunningProvider, startOidcProvider } from '../helpers/oidc-provider.js'
import { enroll, enrollmentSigner, USERS } from './fixture.js'

type Keys = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys']
const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }

async function keyPair(): Promise<Keys> {
  // ECDSA yields a pair; the same WebCrypto objects @peculiar/x509 types against the DOM lib.
  return (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as unknown as Keys
}

function pem(label: string, der: ArrayBuffer): string {
  const body = Buffer.from(der)
    .toString('base64')
    .match(/.{1,64}/g)
    ?.join('\n')
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`
}

/** A self-signed enrollment CA (EC P-256) as PEM certificate and PKCS#8 key. */
async function makeCa() {
  const keys = await keyPair()
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '0a',
    name: 'CN=Enrollment CA',
    notBefore: new Date('2020-01-01'),
    notAfter: new Date('2040-01-01'),
    signingAlgorithm: EC,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.SubjectAlternativeNameExtension([{ type: 'url', value: 'spiffe://ziti.test' }]),
    ],
  })
  const key = await webcrypto.subtle.exportKey(
    'pkcs8',
    keys.privateKey as unknown as webcrypto.CryptoKey, // DOM-typed there
  )
  return { certPem: cert.toString('pem'), keyPem: pem('PRIVATE KEY', key) }
}

async function makeCsr(cn: string) {
  const keys = await keyPair()
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${cn}, O=Example`,
    keys,
    signingAlgorithm: EC,
  })
  return { csrPem: csr.toString('pem'), keys }
}

let provider: RunningProvider
let ca: Awaited<ReturnType<typeof makeCa>>
let tls: Awaited<ReturnType<typeof makeServerCert>>

beforeAll(async () => {
  provider = await startOidcProvider(Object.keys(USERS), (clientId) => USERS[clientId] ?? {})
  ca = await makeCa()
  tls = await makeServerCert()
})
afterAll(() => provider.close())

async function csrApp(withCa = true) {
  const app = await buildTestApp({
    https: { cert: Buffer.from(tls.certPem), key: Buffer.from(tls.keyPem) },
    ...(withCa ? { enrollCa: await EnrollmentCa.load(ca.certPem, ca.keyPem) } : {}),
  })
  const signer = await enrollmentSigner(app, provider, { enrollToCertEnabled: true })
  return { app, ...signer }
}

forEachStore(() => {
  describe('POST /edge/client/v1/enroll/token with a CSR', () => {
    it('issues a client certificate from the enrollment CA and stores its authenticator', async () => {
      const { app, manage } = await csrApp()
      const { csrPem } = await makeCsr('alice-laptop')
      const before = Date.now()
      const res = await enroll(app, [await provider.accessToken('alice')], { clientCsr: csrPem })
      expect(res.statusCode, res.body).toBe(200)
      const { cert, ca: bundle, controllers } = res.json().data
      expect(controllers).toHaveLength(1)

      const leaf = new X509Certificate(cert)
      const root = new X509Certificate(ca.certPem)
      expect(leaf.verify(root.publicKey)).toBe(true)
      expect(leaf.checkIssued(root)).toBe(true)
      expect(leaf.publicKey.export({ format: 'jwk' })).toEqual(
        createPublicKey(new x509.Pkcs10CertificateRequest(csrPem).publicKey.toString('pem')).export(
          { format: 'jwk' },
        ),
      )
      expect(leaf.subject).toBe('CN=alice-laptop\nO=Example')
      expect(leaf.ca).toBe(false)
      expect(leaf.keyUsage).toContain('1.3.6.1.5.5.7.3.2') // clientAuth
      const identity = (
        await manage('GET', '/identities?filter=externalId%20%3D%20%22alice%22')
      ).json().data[0]
      expect(leaf.subjectAltName).toBe(`URI:spiffe://ziti.test/identity/${identity.id}`)
      const from = Date.parse(leaf.validFrom)
      expect(from).toBeLessThanOrEqual(before - 59_000)
      expect(Date.parse(leaf.validTo) - from).toBeGreaterThanOrEqual(365 * 24 * 3_600_000 - 1000)
      // `ca` is the controller's trust bundle: it verifies the controller's own TLS certificate.
      expect(new X509Certificate(tls.certPem).verify(new X509Certificate(bundle).publicKey)).toBe(
        true,
      )
      // The cert authenticator is stored with the identity in one transaction (delete cascades).
      expect(identity.roleAttributes).toEqual(['eng', 'ops'])
    })

    it('refuses a malformed CSR and a CSR whose signature does not verify, creating nothing', async () => {
      const { app, manage } = await csrApp()
      const bad = await enroll(app, [await provider.accessToken('alice')], { clientCsr: 'nope' })
      expect(bad.statusCode).toBe(400)
      expect(bad.json().error).toMatchObject({
        code: 'COULD_NOT_PROCESS_CSR',
        cause: { field: 'clientCsr' },
      })
      // Another key's signature over this CSR's content.
      const { csrPem } = await makeCsr('bob-laptop')
      const parsed = new x509.Pkcs10CertificateRequest(csrPem)
      const raw = Buffer.from(parsed.rawData)
      raw[raw.length - 5] = (raw[raw.length - 5] ?? 0) ^ 0xff // flips signature bits
      const forged = pem(
        'CERTIFICATE REQUEST',
        raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length),
      )
      const res = await enroll(app, [await provider.accessToken('bob')], { clientCsr: forged })
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('COULD_NOT_PROCESS_CSR')
      const names = (await manage('GET', '/identities'))
        .json()
        .data.map((i: { name: string }) => i.name)
      expect(names).toEqual(['admin'])
    })

    it('refuses a CSR whose key is too weak to certify (RSA under 2048 bits), creating nothing', async () => {
      const { app, manage } = await csrApp()
      const RSA = {
        name: 'RSASSA-PKCS1-v1_5',
        modulusLength: 1024,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: 'SHA-256',
      }
      const keys = (await webcrypto.subtle.generateKey(RSA, true, [
        'sign',
        'verify',
      ])) as unknown as Keys
      const csr = await x509.Pkcs10CertificateRequestGenerator.create({
        name: 'CN=weak-laptop',
        keys,
        signingAlgorithm: RSA,
      })
      const res = await enroll(app, [await provider.accessToken('bob')], {
        clientCsr: csr.toString('pem'),
      })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({
        code: 'COULD_NOT_PROCESS_CSR',
        cause: { field: 'clientCsr', reason: expect.stringContaining('1024 bits') },
      })
      const names = (await manage('GET', '/identities'))
        .json()
        .data.map((i: { name: string }) => i.name)
      expect(names).toEqual(['admin'])
    })

    it('without a CA refuses a CSR clearly and still enrolls with a token', async () => {
      const { app, manage, signerId } = await csrApp(false)
      await manage('PATCH', `/external-jwt-signers/${signerId}`, { enrollToTokenEnabled: true })
      const { csrPem } = await makeCsr('carol-laptop')
      const res = await enroll(app, [await provider.accessToken('carol')], { clientCsr: csrPem })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({
        code: 'COULD_NOT_PROCESS_CSR',
        cause: { field: 'clientCsr' },
      })
      const token = await enroll(app, [await provider.accessToken('carol')])
      expect(token.statusCode).toBe(200)
      expect(token.json().data.cert).toBeUndefined()
      expect(token.json().data.ca).toBe(tls.certPem)
    })
  })
})
