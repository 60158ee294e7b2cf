import 'reflect-metadata'
import { createHash, generateKeyPairSync, webcrypto, X509Certificate } from 'node:crypto'
import * as x509 from '@peculiar/x509'
import { beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import { parseSignerCertificate } from '../../src/signers/certificate.js'
import { type KeyKind, makeCert, privateKeyPem, type TestCert } from '../helpers/certs.js'

type CreateParams = Extract<
  Parameters<typeof x509.X509CertificateGenerator.create>[0],
  { signingKey: unknown }
>

/** The INVALID_CERT_PEM error a PEM gets, or undefined when it parses. */
function refusal(pem: string): AppError | undefined {
  try {
    parseSignerCertificate(pem)
    return undefined
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
}

function expectRefused(pem: string, reason: RegExp) {
  const err = refusal(pem)
  expect(err?.code).toBe('INVALID_CERT_PEM')
  expect(err?.statusCode).toBe(400)
  expect(err?.fieldCause?.field).toBe('certPem')
  expect(err?.fieldCause?.reason).toMatch(reason)
}

/**
 * A certificate for a key WebCrypto cannot make (another curve, Ed448, X25519): the subject key is
 * Node's, the signature a P-256 issuer's.
 */
async function certForNodeKey(
  key: ReturnType<typeof generateKeyPairSync>['publicKey'],
): Promise<string> {
  const issuerKeys = (await webcrypto.subtle.generateKey(
    { name: 'ECDSA', namedCurve: 'P-256' },
    false,
    ['sign', 'verify'],
  )) as webcrypto.CryptoKeyPair // ECDSA yields a pair
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '03',
    subject: 'CN=odd key',
    issuer: 'CN=issuer',
    notBefore: new Date('2020-01-01'),
    notAfter: new Date('2040-01-01'),
    publicKey: key.export({ type: 'spki', format: 'der' }),
    signingKey: issuerKeys.privateKey as unknown as CreateParams['signingKey'], // DOM-typed there
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  })
  return cert.toString('pem')
}

let rsa: TestCert
beforeAll(async () => {
  rsa = await makeCert({ kind: 'RS256', cn: 'corp signer' })
})

describe('parseSignerCertificate', () => {
  it('derives the common name, SHA-1 fingerprint and validity window', () => {
    const parsed = parseSignerCertificate(rsa.certPem)
    const raw = new X509Certificate(rsa.certPem).raw
    expect(parsed).toMatchObject({
      commonName: 'corp signer',
      fingerprint: createHash('sha1').update(raw).digest('hex'),
      notBefore: '2020-01-01T00:00:00.000Z',
      notAfter: '2040-01-01T00:00:00.000Z',
    })
    expect(parsed.fingerprint).toMatch(/^[0-9a-f]{40}$/)
    expect(parsed.publicKey.asymmetricKeyType).toBe('rsa')
  })

  it.each([
    ['RS256', 'rsa'],
    ['ES256', 'ec'],
    ['ES384', 'ec'],
    ['EdDSA', 'ed25519'],
  ] as [KeyKind, string][])('accepts a %s key', async (kind, type) => {
    const { certPem } = await makeCert({ kind })
    expect(parseSignerCertificate(certPem).publicKey.asymmetricKeyType).toBe(type)
  })

  it('accepts a P-521 key', async () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'secp521r1' })
    const key = parseSignerCertificate(await certForNodeKey(publicKey)).publicKey
    expect(key.asymmetricKeyDetails?.namedCurve).toBe('secp521r1')
  })

  it('refuses an RSA key under 2048 bits', async () => {
    expectRefused((await makeCert({ kind: 'RSA1024' })).certPem, /2048 bits/)
  })

  it.each(['secp256k1', 'prime192v1', 'brainpoolP256r1'])(
    'refuses an EC key on %s',
    async (namedCurve) => {
      const { publicKey } = generateKeyPairSync('ec', { namedCurve })
      expectRefused(await certForNodeKey(publicKey), /P-256, P-384 or P-521/)
    },
  )

  it.each(['ed448', 'x25519'] as const)('refuses an %s key', async (type) => {
    const { publicKey } = generateKeyPairSync(type as 'ed448') // the overloads take one literal each
    expectRefused(await certForNodeKey(publicKey), new RegExp(`type ${type}`))
  })

  it('parses expired and not yet valid certificates (login enforces the window)', async () => {
    const expired = await makeCert({
      notBefore: new Date('2020-01-01T00:00:00Z'),
      notAfter: new Date('2021-01-01T00:00:00Z'),
    })
    const future = await makeCert({
      notBefore: new Date('2099-01-01T00:00:00Z'),
      notAfter: new Date('2100-01-01T00:00:00Z'),
    })
    expect(parseSignerCertificate(expired.certPem)).toMatchObject({
      notBefore: '2020-01-01T00:00:00.000Z',
      notAfter: '2021-01-01T00:00:00.000Z',
    })
    expect(parseSignerCertificate(future.certPem)).toMatchObject({
      notBefore: '2099-01-01T00:00:00.000Z',
      notAfter: '2100-01-01T00:00:00.000Z',
    })
  })

  it('refuses a chain of two certificates', async () => {
    const other = await makeCert({ kind: 'ES256' })
    expectRefused(`${rsa.certPem}\n${other.certPem}`, /exactly one CERTIFICATE block, found 2 of 2/)
    expectRefused(`${rsa.certPem}\n${rsa.certPem}`, /found 2 of 2/)
  })

  it('refuses a private key, alone or next to the certificate', () => {
    const key = privateKeyPem()
    expectRefused(key, /private key/)
    expectRefused(`${rsa.certPem}\n${key}`, /private key/)
    const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .privateKey.export({ type: 'sec1', format: 'pem' })
      .toString()
    expectRefused(ec, /private key/)
  })

  it('refuses a public key block, which is no certificate', () => {
    const spki = generateKeyPairSync('ed25519')
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString()
    expectRefused(spki, /found 0 of 1/)
  })

  it.each([
    ['empty text', ''],
    ['plain text', 'not a certificate'],
    ['an unterminated block', '-----BEGIN CERTIFICATE-----\nMIIB'],
    ['a body that is not base64', '-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----'],
    [
      'a body that is not a certificate',
      `-----BEGIN CERTIFICATE-----\n${Buffer.from('garbage '.repeat(40)).toString('base64')}\n-----END CERTIFICATE-----`,
    ],
  ])('refuses %s', (_name, pem) => {
    expectRefused(pem, /CERTIFICATE block|could not be parsed/)
  })
})
