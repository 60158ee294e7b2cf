import { createHash, X509Certificate } from 'node:crypto'
import { hostname } from 'node:os'
import type { Config } from '../config.js'
import type { ControllerSelf } from './controller-registry.js'

/**
 * How this instance appears in the controllers list: `CTRL_INSTANCE_NAME` (default host name and
 * port), `CTRL_ADVERTISE_URL` (default the listen address), and the first certificate of the TLS
 * chain it serves with its SHA-1 fingerprint (OpenZiti's form: lowercase hex of the DER), both
 * empty over plain HTTP.
 */
export function controllerSelf(
  config: Config,
  tlsCert?: Buffer,
  /** The port actually listened on, when `config.port` is 0 (any free port). */
  port = config.port,
): ControllerSelf {
  const scheme = tlsCert ? 'https' : 'http'
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  let certPem = ''
  let fingerprint = ''
  if (tlsCert) {
    const cert = new X509Certificate(tlsCert) // the first certificate of the chain
    certPem = cert.toString()
    fingerprint = createHash('sha1').update(cert.raw).digest('hex')
  }
  return {
    name: config.instanceName ?? `${hostname()}:${port}`,
    advertiseUrl: config.advertiseUrl ?? `${scheme}://${host}:${port}`,
    certPem,
    fingerprint,
  }
}
