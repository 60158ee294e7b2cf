import { createHash, type KeyObject, X509Certificate } from 'node:crypto'
import { AppError, fieldError } from '../errors.js'
import { rsaExponentRefusal } from '../jwt/key-strength.js'

/** What the service derives from a signer's certificate. */
export interface SignerCertificate {
  publicKey: KeyObject
  commonName: string
  fingerprint: string
  notBefore: string
  notAfter: string
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g
const EC_CURVES = new Set(['prime256v1', 'secp384r1', 'secp521r1'])

function invalidPem(reason: string): AppError {
  return new AppError('INVALID_CERT_PEM', { cause: { field: 'certPem', reason } })
}

/** Checks that the key can verify JWS signatures with an algorithm this service accepts. */
function checkKey(key: KeyObject): void {
  const type = key.asymmetricKeyType
  const details = key.asymmetricKeyDetails ?? {}
  if (type === 'rsa' || type === 'rsa-pss') {
    if ((details.modulusLength ?? 0) < 2048) throw invalidPem('RSA keys need at least 2048 bits')
    const weak = rsaExponentRefusal(details.publicExponent)
    // A key anyone could forge signatures for is a validation failure of the field, not bad PEM.
    if (weak) throw fieldError('COULD_NOT_VALIDATE', 'certPem', weak)
    return
  }
  if (type === 'ec') {
    if (!EC_CURVES.has(details.namedCurve ?? '')) {
      throw invalidPem('EC keys must be on P-256, P-384 or P-521')
    }
    return
  }
  if (type === 'ed25519') return
  throw invalidPem(`keys of type ${type ?? 'unknown'} cannot verify JWTs here`)
}

function commonNameOf(subject: string): string {
  for (const line of subject.split('\n')) {
    if (line.startsWith('CN=')) return line.slice(3)
  }
  return ''
}

/**
 * Parses a signer's `certPem`: exactly one x509 certificate and nothing else (a private key in the
 * field is refused), with a public key that can verify JWS signatures.
 * Throws AppError INVALID_CERT_PEM otherwise.
 */
export function parseSignerCertificate(pem: string): SignerCertificate {
  const blocks = [...pem.matchAll(BLOCK)]
  if (blocks.some((b) => b[1]?.includes('PRIVATE KEY'))) {
    throw invalidPem('the PEM holds a private key; supply only the public certificate')
  }
  const certs = blocks.filter((b) => b[1] === 'CERTIFICATE')
  const [block] = certs
  if (block === undefined || certs.length !== 1 || blocks.length !== 1) {
    throw invalidPem(
      `expected exactly one CERTIFICATE block, found ${certs.length} of ${blocks.length}`,
    )
  }
  let cert: X509Certificate
  try {
    cert = new X509Certificate(block[0])
  } catch {
    throw invalidPem('the certificate could not be parsed')
  }
  checkKey(cert.publicKey)
  return {
    publicKey: cert.publicKey,
    commonName: commonNameOf(cert.subject),
    fingerprint: createHash('sha1').update(cert.raw).digest('hex'),
    notBefore: new Date(cert.validFrom).toISOString(),
    notAfter: new Date(cert.validTo).toISOString(),
  }
}
