import { BlockList, isIP } from 'node:net'
import { embeddedIPv4, ipv6Bytes } from './ipv6-embedded.js'

/** Where the controller may fetch a JWKS from. */
export interface FetchPolicy {
  allowHttp: boolean
  blockPrivate: boolean
}

// Never fetched from, whatever the settings: link-local and the cloud metadata services (AWS,
// GCP, Azure at 169.254.169.254, AWS's IPv6 fd00:ec2::254, Alibaba's 100.100.100.200),
// multicast, broadcast and unspecified.
const ALWAYS = new BlockList()
ALWAYS.addSubnet('169.254.0.0', 16, 'ipv4')
ALWAYS.addAddress('100.100.100.200', 'ipv4')
ALWAYS.addSubnet('224.0.0.0', 4, 'ipv4')
ALWAYS.addSubnet('0.0.0.0', 8, 'ipv4')
ALWAYS.addSubnet('255.255.255.255', 32, 'ipv4')
ALWAYS.addSubnet('fe80::', 10, 'ipv6')
ALWAYS.addSubnet('fd00:ec2::254', 128, 'ipv6')
ALWAYS.addSubnet('ff00::', 8, 'ipv6')
ALWAYS.addSubnet('::', 128, 'ipv6')

// Refused only with CTRL_JWKS_BLOCK_PRIVATE=true: loopback, RFC 1918, CGNAT, IETF protocol
// assignments, benchmarking, reserved (class E), unique local and the deprecated site-local.
const PRIVATE = new BlockList()
PRIVATE.addSubnet('127.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4')
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4')
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4')
PRIVATE.addSubnet('192.0.0.0', 24, 'ipv4')
PRIVATE.addSubnet('198.18.0.0', 15, 'ipv4')
PRIVATE.addSubnet('240.0.0.0', 4, 'ipv4')
PRIVATE.addSubnet('::1', 128, 'ipv6')
PRIVATE.addSubnet('fc00::', 7, 'ipv6')
PRIVATE.addSubnet('fec0::', 10, 'ipv6')

type Family = 'ipv4' | 'ipv6'

/** The address itself and every IPv4 address it carries, each with its family. */
function forms(address: string): { address: string; family: Family }[] {
  if (isIP(address) === 4) return [{ address, family: 'ipv4' }]
  const bytes = ipv6Bytes(address)
  if (bytes === undefined) return [{ address, family: 'ipv6' }]
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2)
    groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16))
  const self = { address: groups.join(':'), family: 'ipv6' as const }
  return [self, ...embeddedIPv4(bytes).map((v4) => ({ address: v4, family: 'ipv4' as const }))]
}

/**
 * Why an address may not be fetched from, or undefined when it may. An IPv6 address that carries
 * an IPv4 address (mapped, SIIT, compatible, NAT64, 6to4, Teredo) is refused when that one is.
 */
export function addressRefusal(address: string, policy: FetchPolicy): string | undefined {
  const all = forms(address)
  if (all.some((ip) => ALWAYS.check(ip.address, ip.family)))
    return `address ${address} is in a range that is never fetched from`
  if (policy.blockPrivate && all.some((ip) => PRIVATE.check(ip.address, ip.family))) {
    return `address ${address} is private or loopback (CTRL_JWKS_BLOCK_PRIVATE=true)`
  }
  return undefined
}

/**
 * Why a URL may not be fetched from, or undefined when it may. Checks the scheme, user info (a
 * fetch would send it as credentials, and undici refuses it anyway) and, for an IP literal host,
 * the address; names are checked when they are resolved, at connect time.
 */
export function urlRefusal(raw: string, policy: FetchPolicy): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    return policy.allowHttp ? 'the scheme must be http or https' : 'the scheme must be https'
  }
  if (url.username !== '' || url.password !== '')
    return 'the URL may not hold a user name or password'
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host)) return addressRefusal(host, policy)
  return undefined
}
