// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata'
import { webcrypto } from 'node:crypto'
import * as x509 from '@peculiar/x509'

// Node's webcrypto implements the WebCrypto interface @peculiar/x509 types against the DOM lib.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])

const RS256 = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
}

/**
 * A self-signed RS256 certificate (RSA 2048, as the tests' `makeCert` makes them) for a
 * certificate signer, as PEM.
 */
export async function selfSignedPem(cn: string, serial: number): Promise<string> {
  const keys = (await webcrypto.subtle.generateKey(RS256, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair // an asymmetric algorithm always yields a pair
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString(16).padStart(2, '0'),
    name: `CN=${cn}`,
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5' },
    keys: keys as unknown as Parameters<
      typeof x509.X509CertificateGenerator.createSelfSigned
    >[0]['keys'], // the same WebCrypto objects, DOM-typed there
  })
  return cert.toString('pem')
}
