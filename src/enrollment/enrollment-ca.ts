// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata'
import {
  createPrivateKey,
  createPublicKey,
  X509Certificate as NodeCertificate,
  randomBytes,
  webcrypto,
} from 'node:crypto'
import * as x509 from '@peculiar/x509'
import { MIN_RSA_BITS, rsaExponentRefusal } from '../jwt/key-strength.js'
import { CsrRefused } from './refusals.js'

// Node's webcrypto implements the interface @peculiar/x509 types against the DOM lib.
const crypto = webcrypto as unknown as Parameters<typeof x509.X509CertificateGenerator.create>[1]
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g
const CURVES: Record<string, [string, string]> = {
  prime256v1: ['P-256', 'SHA-256'],
  secp384r1: ['P-384', 'SHA-384'],
  secp521r1: ['P-521', 'SHA-512'],
}

/**
 * Why the CSR's key may not be certified, or undefined: the same rules as for the keys that sign
 * JWTs here (RSA of at least 2048 bits with an exponent of at least 65537; EC on P-256, P-384 or
 * P-521; Ed25519 or Ed448). The CA would otherwise vouch for a key anyone could break.
 */
function csrKeyRefusal(csr: x509.Pkcs10CertificateRequest): string | undefined {
  let key: ReturnType<typeof createPublicKey>
  try {
    key = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' })
  } catch {
    return 'the CSR public key cannot be read'
  }
  const type = key.asymmetricKeyType
  const details = key.asymmetricKeyDetails ?? {}
  if (type === 'rsa' || type === 'rsa-pss') {
    const bits = details.modulusLength ?? 0
    if (bits < MIN_RSA_BITS)
      return `the CSR's RSA key has ${bits} bits; at least ${MIN_RSA_BITS} are needed`
    return rsaExponentRefusal(details.publicExponent)
  }
  if (type === 'ec') {
    const curve = details.namedCurve ?? ''
    return Object.hasOwn(CURVES, curve)
      ? undefined
      : `the CSR's EC key is on curve ${curve || 'unknown'}; P-256, P-384 or P-521 are needed`
  }
  if (type === 'ed25519' || type === 'ed448') return undefined
  return `the CSR's key type ${type ?? 'unknown'} cannot be certified; use RSA, EC, Ed25519 or Ed448`
}

/** A certificate issued to an enrolling identity. */
export interface IssuedCertificate {
  /** The leaf, then the intermediates of the CA file (no self-signed root). */
  chainPem: string
  certPem: string
  /** SHA-1 of the leaf's DER, lowercase hex. */
  fingerprint: string
}

type SigningAlgorithm = {
  import: webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | webcrypto.Algorithm
  sign: webcrypto.Algorithm | webcrypto.EcdsaParams
}

function algorithmOf(keyPem: string): SigningAlgorithm {
  const key = createPrivateKey(keyPem)
  if (key.asymmetricKeyType === 'rsa') {
    const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
    return { import: alg, sign: alg }
  }
  if (key.asymmetricKeyType === 'ec') {
    const curve = CURVES[key.asymmetricKeyDetails?.namedCurve ?? '']
    if (!curve) throw new Error('the enrollment CA key is on an unsupported curve')
    return {
      import: { name: 'ECDSA', namedCurve: curve[0] },
      sign: { name: 'ECDSA', hash: curve[1] },
    }
  }
  if (key.asymmetricKeyType === 'ed25519')
    return { import: { name: 'Ed25519' }, sign: { name: 'Ed25519' } }
  throw new Error(`the enrollment CA key type ${key.asymmetricKeyType} is not supported`)
}

/**
 * The controller's enrollment CA: signs enrolling identities' CSRs as OpenZiti does (subject kept,
 * a SPIFFE URI SAN naming the identity, clientAuth, not a CA).
 */
export class EnrollmentCa {
  private constructor(
    private readonly cert: x509.X509Certificate,
    private readonly key: webcrypto.CryptoKey,
    private readonly sign: SigningAlgorithm['sign'],
    private readonly intermediatesPem: string[],
    readonly trustDomain: string,
  ) {}

  /** Loads the CA from its PEM certificate (first block; later ones are its chain) and PKCS#8/SEC1 key. */
  static async load(certPem: string, keyPem: string): Promise<EnrollmentCa> {
    const blocks = certPem.match(PEM_CERT) ?? []
    const [first, ...chain] = blocks
    if (!first) throw new Error('the enrollment CA file holds no certificate')
    const cert = new x509.X509Certificate(first)
    const node = new NodeCertificate(first)
    if (!node.ca) throw new Error('the enrollment CA certificate is not a CA (basicConstraints)')
    if (!node.checkPrivateKey(createPrivateKey(keyPem))) {
      throw new Error('the enrollment CA key does not match its certificate')
    }
    const alg = algorithmOf(keyPem)
    const der = createPrivateKey(keyPem).export({ type: 'pkcs8', format: 'der' })
    const key = await webcrypto.subtle.importKey('pkcs8', der, alg.import, false, ['sign'])
    const intermediates = [first, ...chain].filter((pem) => {
      const c = new NodeCertificate(pem)
      return c.subject !== c.issuer // a self-signed root is the client's to trust, not to send
    })
    return new EnrollmentCa(cert, key, alg.sign, intermediates, trustDomainOf(node))
  }

  /** Checks a PEM CSR's signature and issues the identity's certificate; throws CsrRefused. */
  async issue(
    csrPem: string,
    identityId: string,
    notBefore: Date,
    validityMs: number,
  ): Promise<IssuedCertificate> {
    let csr: x509.Pkcs10CertificateRequest
    try {
      csr = new x509.Pkcs10CertificateRequest(csrPem.trim())
    } catch {
      throw new CsrRefused('not a PEM certificate signing request')
    }
    let valid = false
    try {
      valid = await csr.verify(crypto)
    } catch {
      valid = false
    }
    if (!valid) throw new CsrRefused('the CSR signature does not verify')
    const weak = csrKeyRefusal(csr)
    if (weak) throw new CsrRefused(weak)
    const leaf = await x509.X509CertificateGenerator.create(
      {
        serialNumber: randomBytes(16)
          .toString('hex')
          .replace(/^[89a-f]/, '1'),
        subject: csr.subject,
        issuer: this.cert.subject,
        notBefore,
        notAfter: new Date(notBefore.getTime() + validityMs),
        signingAlgorithm: this.sign,
        publicKey: csr.publicKey,
        signingKey: this.key as unknown as x509.X509CertificateCreateWithKeyParams['signingKey'], // the same WebCrypto key, DOM-typed there
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(
            x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
            true,
          ),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
          new x509.SubjectAlternativeNameExtension([
            { type: 'url', value: `spiffe://${this.trustDomain}/identity/${identityId}` },
          ]),
          await x509.AuthorityKeyIdentifierExtension.create(this.cert, false, crypto),
        ],
      },
      crypto,
    )
    const certPem = leaf.toString('pem')
    const fingerprint = new NodeCertificate(certPem).fingerprint.replaceAll(':', '').toLowerCase()
    return { certPem, chainPem: [certPem, ...this.intermediatesPem].join('\n'), fingerprint }
  }
}

/** The CA's SPIFFE trust domain when it names one, else its common name made host-like. */
function trustDomainOf(cert: NodeCertificate): string {
  const spiffe = /URI:spiffe:\/\/([^/,\s]+)/.exec(cert.subjectAltName ?? '')?.[1]
  if (spiffe) return spiffe
  const cn = /CN=([^\n]+)/.exec(cert.subject)?.[1] ?? 'ziti'
  return cn.toLowerCase().replace(/[^a-z0-9.-]+/g, '-')
}
