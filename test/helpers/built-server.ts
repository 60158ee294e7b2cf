import type { ChildProcess } from 'node:child_process'
import { webcrypto } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { request } from 'node:https'
import * as x509 from '@peculiar/x509'
import './certs.js' // sets @peculiar/x509's crypto provider
import { startServer as startBuilt, stopServer } from './server-process.js'

export interface RunningServer {
  child: ChildProcess
  /** `https://127.0.0.1:PORT`, from the "listening on" line. */
  base: string
  stop: () => Promise<number | null>
}

/** Runs the built server with these settings (and nothing else from the environment). */
export async function startServer(env: Record<string, string>): Promise<RunningServer> {
  const started = await startBuilt(env)
  return { child: started.child, base: started.base, stop: () => stopServer(started) }
}

export interface Reply<T> {
  status: number
  type: string
  headers: IncomingHttpHeaders
  text: string
  json: T
}

export interface CallOptions {
  method?: string
  headers?: Record<string, string>
  body?: unknown
  /** PEM certificates to trust; without it, Node's default roots (the "system" trust). */
  ca?: string
  /** Skips certificate verification, as the CLI does to fetch the CA it is offered. */
  insecure?: boolean
}

/** One HTTPS request; a TLS failure rejects with Node's error (its `code` names the reason). */
export function call<T>(url: string, options: CallOptions = {}): Promise<Reply<T>> {
  const { method = 'GET', body, ca, insecure = false } = options
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const headers = {
    ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    ...options.headers,
  }
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers, ...(ca ? { ca } : {}), rejectUnauthorized: !insecure, agent: false },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => {
          const type = res.headers['content-type'] ?? ''
          // The caller names the shape it then asserts; non-JSON answers leave `json` null.
          const json = (type.startsWith('application/json') ? JSON.parse(text) : null) as T
          resolve({ status: res.statusCode ?? 0, type, headers: res.headers, text, json })
        })
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

/** A root CA and a server certificate for 127.0.0.1 it issued, with the server's key (PEM). */
export async function makeCaChain(): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }
  const pair = async () =>
    (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair // ECDSA yields a pair
  const [caKeys, leafKeys] = [await pair(), await pair()]
  type Keys = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys']
  const validity = { notBefore: new Date('2020-01-01'), notAfter: new Date('2040-01-01') }
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '0a',
    name: 'CN=walk-through root CA',
    ...validity,
    signingAlgorithm: alg,
    keys: caKeys as unknown as Keys, // the same WebCrypto objects, DOM-typed there
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign),
    ],
  })
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: '0b',
    subject: 'CN=127.0.0.1',
    issuer: ca.subject,
    ...validity,
    signingAlgorithm: alg,
    publicKey: leafKeys.publicKey as unknown as Keys['publicKey'], // DOM-typed there
    signingKey: caKeys.privateKey as unknown as Keys['privateKey'], // DOM-typed there
    extensions: [
      new x509.BasicConstraintsExtension(false),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }]),
    ],
  })
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey))
  const lines = der
    .toString('base64')
    .match(/.{1,64}/g)
    ?.join('\n')
  return {
    caPem: ca.toString('pem'),
    certPem: `${leaf.toString('pem')}\n${ca.toString('pem')}\n`,
    keyPem: `-----BEGIN PRIVATE KEY-----\n${lines}\n-----END PRIVATE KEY-----\n`,
  }
}
