import { isIP } from 'node:net'

export const PROTOCOLS = ['tls', 'tcp', 'udp', 'dtls', 'ws', 'wss', 'transport'] as const

/** Splits `host:port` (IPv6 in brackets); returns a reason when it is not one. */
export function hostPortProblem(value: string, requireHost: boolean): string | undefined {
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
      if (PROTOCOLS.some((p) => p === first))
        return `no protocol here: write host:port, without ${first}:`
      return isIP(host) === 6
        ? 'an IPv6 host must be in brackets, as [::1]:port'
        : 'too many colons: write host:port (an IPv6 host in brackets, as [::1]:port)'
    }
  }
  if (requireHost && host.trim() === '') return 'the host is missing'
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return `the port must be a number from 1 to 65535, not "${port}"`
  }
  return undefined
}

/** Checks `protocol:host:port`; returns a reason when it is not a router address. */
export function addressProblem(value: string): string | undefined {
  const colon = value.indexOf(':')
  const protocol = colon < 0 ? '' : value.slice(0, colon)
  if (!PROTOCOLS.some((p) => p === protocol)) {
    return `"${value}" is not an address: use protocol:host:port with protocol ${PROTOCOLS.join(', ')}`
  }
  const problem = hostPortProblem(value.slice(colon + 1), false)
  return problem ? `"${value}" is not a valid address: ${problem}` : undefined
}

/** An advertise value: `host:port`, or a full `protocol:host:port` address. */
export function advertiseProblem(value: string): string | undefined {
  const colon = value.indexOf(':')
  const protocol = value.slice(0, colon)
  if (colon > 0 && PROTOCOLS.some((p) => p === protocol)) return addressProblem(value)
  const problem = hostPortProblem(value, true)
  return problem ? `"${value}" is not host:port or protocol:host:port: ${problem}` : undefined
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
  if (value.startsWith('file:')) {
    if (!value.startsWith('file:///') && !value.startsWith('file:/')) {
      return `"${value}" is not read as a file by the router: write file:///absolute/path or a plain path`
    }
    if (value.startsWith('file://') && !value.startsWith('file:///')) {
      return `"${value}" names a host, not a path: write file:///absolute/path`
    }
    try {
      return { kind: 'file', path: decodeURIComponent(new URL(value).pathname) }
    } catch {
      return `"${value}" is not a valid file URL`
    }
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)?.[1]
  if (scheme && scheme.length === 1) {
    // Go's URL parser reads C:\... as the scheme c, as the router on Linux does.
    return `"${value}" reads as the URL scheme ${scheme.toLowerCase()}:, not a path (a Windows path?): use a path, file:// or pem:`
  }
  if (scheme) {
    return allowEngine
      ? { kind: 'engine', scheme }
      : `"${value}": the scheme ${scheme}: is not supported here (use a path, file:// or pem:)`
  }
  if (/[#?]/.test(value))
    return `"${value}": the router reads # and ? in a path as URL parts; rename the file`
  // The router reads a path as a URL: a % starts an escape (%20 is a space), and must be one.
  const badEscape = /%(?![0-9A-Fa-f]{2})/.exec(value)
  if (badEscape) {
    return `"${value}": invalid URL escape "${value.slice(badEscape.index, badEscape.index + 3)}" (the router reads a path as a URL; write % as %25)`
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

/** A tunnel resolver: `udp://ip:port` (a DNS server) or `file://path` (a hosts file). */
export function resolverProblem(value: string): string | undefined {
  if (value.startsWith('udp://')) {
    const problem = hostPortProblem(value.slice(6), true)
    return problem ? `"${value}": ${problem}` : undefined
  }
  if (value.startsWith('file://') || value.startsWith('/')) return undefined
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
