// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata'
import { X509Certificate, X509Certificates } from '@peculiar/x509'

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g

/**
 * The certificates of a PEM bundle as a base64 PKCS#7 certs-only structure (RFC 7030's
 * `/cacerts` answer). Throws an Error saying why when the bundle holds no certificate or a block
 * that is not one.
 */
export function pkcs7CertsOnly(pem: string): string {
  const blocks = pem.match(PEM_CERT) ?? []
  if (blocks.length === 0) throw new Error('holds no PEM certificate (-----BEGIN CERTIFICATE-----)')
  const certs = blocks.map((block, i) => {
    try {
      return new X509Certificate(block)
    } catch {
      throw new Error(`certificate ${i + 1} of ${blocks.length} is not a valid X.509 certificate`)
    }
  })
  return new X509Certificates(certs).export('base64')
}
