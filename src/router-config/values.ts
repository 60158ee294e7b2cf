import { isIP } from 'node:net'
import { codePoint } from './decode.js'

/** The address parsers of the reference router (§1.6); `transport` is a binding, not a protocol. */
export const PROTOCOLS = ['tls', 'tcp', 'udp', 'dtls', 'ws', 'wss'] as const

const isProtocol = (text: string) => PROTOCOLS.some((p) => p === text)

/** While a file is checked: hides the environment's values in a text (see hide.ts). */
let hiding: ((text: string) => string) | undefined

/**
 * Runs `work` (the checks of one file, synchronous) with `hide` applied by `quote` before it cuts
 * a value short: a cut must never leave a piece of a secret, or its length, in a message.
 */
export function whileHiding<T>(hide: ((text: string) => string) | undefined, work: () => T): T {
  const before = hiding
  hiding = hide
  try {
    return work()
  } finally {
    hiding = before
  }
}

/** Whether a value holds a value from the environment that messages hide. */
const holdsHidden = (value: string) => hiding !== undefined && hiding(value) !== value

/**
 * A value as a message shows it: quoted and escaped as a JSON string, and cut short when long, so
 * that a pasted key or a line break never prints whole; values from the environment as ${NAME}.
 */
export function quote(value: string, max = 40): string {
  const text = hiding ? hiding(value) : value
  const shown = JSON.stringify(text.length > max ? text.slice(0, max) : text)
  return text.length > max ? `${shown.slice(0, -1)}..." (${text.length} characters)` : shown
}

/** The first control character of a value (a line break, a NUL), as U+XXXX, and its index. */
export function controlCharacter(value: string): { code: string; index: number } | undefined {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      return { code: codePoint(c), index: i }
    }
  }
  return undefined
}

/**
 * Splits `host:port` (IPv6 in brackets); returns a reason when it is not one. The port is from
 * `minPort` (1; a transport address also takes 0, reference §1.6) to 65535.
 */
export function hostPortProblem(
  value: string,
  requireHost: boolean,
  minPort = 1,
): string | undefined {
  let host: string
  let port: string
  if (value.startsWith('[')) {
    const close = value.indexOf(']')
    if (close < 0 || value[close + 1] !== ':') return 'an IPv6 host must be written [addr]:port'
    host = value.slice(1, close)
    port = value.slice(close + 2)
    if (isIP(host) !== 6) return `"${host}" in brackets is not an IPv6 address`
  } else {
    const colon = value.lastIndexOf(':')
    if (colon < 0) return 'the port is missing (use host:port)'
    host = value.slice(0, colon)
    port = value.slice(colon + 1)
    if (host.includes(':')) {
      const first = host.slice(0, host.indexOf(':'))
      if (isProtocol(first) || first === 'transport')
        return `no protocol here: write host:port, without ${first}:`
      return isIP(host) === 6
        ? 'an IPv6 host must be in brackets, as [::1]:port'
        : 'too many colons: write host:port (an IPv6 host in brackets, as [::1]:port)'
    }
  }
  if (requireHost && host.trim() === '') return 'the host is missing'
  if (!/^\d{1,5}$/.test(port) || Number(port) < minPort || Number(port) > 65535) {
    return `the port must be a number from ${minPort} to 65535, not "${port}"`
  }
  return undefined
}

/** Checks `protocol:host:port`; returns a reason when it is not a router address. */
export function addressProblem(value: string): string | undefined {
  const colon = value.indexOf(':')
  const protocol = colon < 0 ? '' : value.slice(0, colon)
  if (!isProtocol(protocol)) {
    return `"${value}" is not an address: use protocol:host:port with protocol ${PROTOCOLS.join(', ')}`
  }
  const problem = hostPortProblem(value.slice(colon + 1), false, 0)
  return problem ? `"${value}" is not a valid address: ${problem}` : undefined
}

/** An advertise value: `host:port`, or a full `protocol:host:port` address. */
export function advertiseProblem(value: string): string | undefined {
  const colon = value.indexOf(':')
  const protocol = value.slice(0, colon)
  if (colon > 0 && isProtocol(protocol)) return addressProblem(value)
  const problem = hostPortProblem(value, true)
  return problem ? `"${value}" is not host:port or protocol:host:port: ${problem}` : undefined
}

/**
 * An edge listener's advertise (reference §2.7): host:port without a protocol. The router reads the
 * port after the first colon, so an IPv6 host, bracketed or not, cannot be advertised.
 */
export function edgeAdvertiseProblem(value: string): string | undefined {
  const colon = value.indexOf(':')
  const first = value.slice(0, colon)
  if (colon > 0 && (isProtocol(first) || first === 'transport'))
    return `"${value}": no protocol here: an edge listener advertises host:port, without ${first}:`
  if (value.startsWith('[') || (colon >= 0 && value.indexOf(':', colon + 1) >= 0)) {
    return `"${value}": an edge listener advertises host:port with one colon (the router reads the port after the first colon), so an IPv6 address cannot be advertised; use a DNS name`
  }
  const problem = hostPortProblem(value, true)
  return problem ? `"${value}" is not host:port: ${problem}` : undefined
}

/**
 * An edge listener's address beyond the address rules (reference §2.7): the router splits it at
 * every colon and reads the third part as the port, so an IPv6 host fails there, even in brackets.
 */
export function edgeAddressProblem(value: string): string | undefined {
  if (!/^\d+$/.test(value.split(':')[2] ?? '')) {
    return `"${value}": the router reads an edge listener's port as the third colon-separated part, so an IPv6 host fails (even in brackets); listen on 0.0.0.0 or a host name`
  }
  return undefined
}

export type IdentityLocation =
  | { kind: 'file'; path: string }
  | { kind: 'pem'; pem: string }
  | { kind: 'engine'; scheme: string }

/** Reads an identity value: a file path, a `file://` URL, or inline `pem:` (or a key engine URL). */
export function identityLocation(value: string, allowEngine: boolean): IdentityLocation | string {
  if (value.trim() === '')
    return 'is empty: give a file path, a file:// URL or an inline pem: value'
  if (value.startsWith('pem:') || value.startsWith('-----BEGIN')) {
    const pem = value.startsWith('pem:') ? value.slice(4) : value
    return pem.includes('-----BEGIN')
      ? { kind: 'pem', pem }
      : 'the pem: value holds no PEM block (-----BEGIN ...)'
  }
  const shown = quote(value)
  // Anything else is a URL to the router, and Go's URL parser refuses control characters.
  const control = controlCharacter(value)
  if (control) {
    const pem = value.includes('-----BEGIN')
      ? '; an inline PEM must start with pem: or -----BEGIN'
      : ''
    return `${shown} holds the control character ${control.code} at character ${control.index + 1}, which the router refuses (it reads the value as a URL)${pem}`
  }
  if (value.startsWith('file:')) {
    if (!value.startsWith('file:///') && !value.startsWith('file:/')) {
      return `${shown} is not read as a file by the router: write file:///absolute/path or a plain path`
    }
    if (value.startsWith('file://') && !value.startsWith('file:///')) {
      return `${shown} names a host, not a path: write file:///absolute/path`
    }
    try {
      return { kind: 'file', path: decodeURIComponent(new URL(value).pathname) }
    } catch {
      return `${shown} is not a valid file URL`
    }
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)?.[1]
  if (scheme && scheme.length === 1) {
    // Go's URL parser reads C:\... as the scheme c, as the router on Linux does.
    return `${shown} reads as the URL scheme ${scheme.toLowerCase()}:, not a path (a Windows path?): use a path, file:// or pem:`
  }
  if (scheme) {
    return allowEngine
      ? { kind: 'engine', scheme }
      : `${shown}: the scheme "${scheme}:" is not supported here (use a path, file:// or pem:)`
  }
  if (/[#?]/.test(value))
    return `${shown}: the router reads # and ? in a path as URL parts; rename the file`
  // The router reads a path as a URL: a % starts an escape (%20 is a space), and must be one.
  const badEscape = /%(?![0-9A-Fa-f]{2})/.exec(value)
  if (badEscape) {
    // The escape's text is shown only when no value from the environment is in the path: it
    // could be the first characters of one.
    const shownEscape = holdsHidden(value)
      ? ''
      : ` ${quote(value.slice(badEscape.index, badEscape.index + 3))}`
    return `${shown}: invalid URL escape${shownEscape} (a % not followed by two hex digits: the router reads a path as a URL; write % as %25)`
  }
  return { kind: 'file', path: value.includes('%') ? unescapePath(value) : value }
}

/** A path's %XX escapes decoded as Go's URL parser does (left as written when not UTF-8). */
function unescapePath(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

export function cidrProblem(value: string): string | undefined {
  const [addr, bits, ...rest] = value.split('/')
  const family = isIP(addr ?? '')
  if (rest.length > 0 || bits === undefined || family === 0 || !/^\d{1,3}$/.test(bits)) {
    return `"${value}" is not a CIDR such as 100.64.0.1/10`
  }
  return Number(bits) > (family === 4 ? 32 : 128)
    ? `"${value}": the prefix length is too large`
    : undefined
}

const DISPOSITIONS = ['refused', 'servfail', 'timeout']

/**
 * A tunnel resolver: `udp://ip:port` (a DNS server) or `file://path` (a hosts file), with an
 * optional query that says what unanswerable questions get: `?unanswerable=servfail`,
 * `?response=servfail` or a bare `?servfail` (refused, servfail or timeout, in any case).
 */
export function resolverProblem(value: string): string | undefined {
  const q = value.indexOf('?')
  const base = q < 0 ? value : value.slice(0, q)
  if (q >= 0) {
    const query = value.slice(q + 1)
    const disposition = query.replace(/^(unanswerable|response)=/, '')
    if (!DISPOSITIONS.includes(disposition.toLowerCase())) {
      return `"${value}": the query must be ?unanswerable=, ?response= or a bare one of ${DISPOSITIONS.join(', ')}`
    }
  }
  if (base.startsWith('udp://')) {
    const problem = hostPortProblem(base.slice(6), true)
    return problem ? `"${value}": ${problem}` : undefined
  }
  if (base.startsWith('file://') || base.startsWith('/')) return undefined
  return `"${value}" is not a resolver: use udp://ip:port (for example udp://127.0.0.1:53) or file:///path`
}

/** A proxy-mode service: `name:port` or `name:port:tcp|udp`. */
export function serviceProblem(value: string): string | undefined {
  const [name, port, protocol, ...rest] = value.split(':')
  if (port === undefined || rest.length > 0 || name === '')
    return `"${value}" must be service:port or service:port:tcp|udp`
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return `"${value}": the port must be a number from 1 to 65535`
  }
  if (protocol !== undefined && protocol !== 'tcp' && protocol !== 'udp')
    return `"${value}": the protocol must be tcp or udp`
  return undefined
}
