import 'reflect-metadata'
import { generateKeyPairSync, webcrypto } from 'node:crypto'
import * as x509 from '@peculiar/x509'

// Node's webcrypto implements the WebCrypto interface @peculiar/x509 types against the DOM lib.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])

/** `RSA-E3`: a 2048-bit RSA key with the public exponent 3, which signers must refuse. */
export type KeyKind = 'RS256' | 'ES256' | 'ES384' | 'EdDSA' | 'RSA1024' | 'RSA-E3'
type KeyGen = webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams | webcrypto.Algorithm

function algorithmOf(kind: KeyKind): {
  gen: KeyGen
  sign: webcrypto.EcdsaParams | webcrypto.Algorithm
} {
  switch (kind) {
    case 'RS256':
    case 'RSA1024':
    case 'RSA-E3':
      return {
        gen: {
          name: 'RSASSA-PKCS1-v1_5',
          hash: 'SHA-256',
          publicExponent: new Uint8Array(kind === 'RSA-E3' ? [3] : [1, 0, 1]),
          modulusLength: kind === 'RSA1024' ? 1024 : 2048,
        },
        sign: { name: 'RSASSA-PKCS1-v1_5' },
      }
    case 'ES256':
      return {
        gen: { name: 'ECDSA', namedCurve: 'P-256' },
        sign: { name: 'ECDSA', hash: 'SHA-256' },
      }
    case 'ES384':
      return {
        gen: { name: 'ECDSA', namedCurve: 'P-384' },
        sign: { name: 'ECDSA', hash: 'SHA-384' },
      }
    case 'EdDSA':
      return { gen: { name: 'Ed25519' }, sign: { name: 'Ed25519' } }
  }
}

export interface TestCert {
  certPem: string
  privateKey: webcrypto.CryptoKey
  publicKey: webcrypto.CryptoKey
}

/** A self-signed certificate and its key pair, made with WebCrypto. */
export async function makeCert(
  options: { kind?: KeyKind; cn?: string; notBefore?: Date; notAfter?: Date } = {},
): Promise<TestCert> {
  const { gen, sign } = algorithmOf(options.kind ?? 'RS256')
  const keys = (await webcrypto.subtle.generateKey(gen, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair // asymmetric algorithms always yield a pair
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${options.cn ?? 'test signer'}`,
    notBefore: options.notBefore ?? new Date('2020-01-01T00:00:00Z'),
    notAfter: options.notAfter ?? new Date('2040-01-01T00:00:00Z'),
    signingAlgorithm: sign,
    keys: keys as unknown as Parameters<
      typeof x509.X509CertificateGenerator.createSelfSigned
    >[0]['keys'], // same WebCrypto objects, DOM-typed there
  })
  return { certPem: cert.toString('pem'), privateKey: keys.privateKey, publicKey: keys.publicKey }
}

export function privateKeyPem(): string {
  return generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString()
}

/** A server certificate for 127.0.0.1 with its PKCS#8 private key, both PEM. */
export async function makeServerCert(): Promise<{ certPem: string; keyPem: string }> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }
  const keys = (await webcrypto.subtle.generateKey(alg, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair // ECDSA yields a pair
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '02',
    name: 'CN=127.0.0.1',
    notBefore: new Date('2020-01-01'),
    notAfter: new Date('2040-01-01'),
    signingAlgorithm: alg,
    keys: keys as unknown as Parameters<
      typeof x509.X509CertificateGenerator.createSelfSigned
    >[0]['keys'], // DOM-typed there
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }])],
  })
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  const body = der
    .toString('base64')
    .match(/.{1,64}/g)
    ?.join('\n')
  return {
    certPem: cert.toString('pem'),
    keyPem: `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`,
  }
}
