import { BlockList, isIP } from 'node:net'

/** Where the controller may fetch a JWKS from. */
export interface FetchPolicy {
  allowHttp: boolean
  blockPrivate: boolean
}

// Never fetched from, whatever the settings: link-local (cloud metadata), multicast, unspecified.
const ALWAYS = new BlockList()
ALWAYS.addSubnet('169.254.0.0', 16, 'ipv4')
ALWAYS.addSubnet('224.0.0.0', 4, 'ipv4')
ALWAYS.addSubnet('0.0.0.0', 8, 'ipv4')
ALWAYS.addSubnet('255.255.255.255', 32, 'ipv4')
ALWAYS.addSubnet('fe80::', 10, 'ipv6')
ALWAYS.addSubnet('fd00:ec2::254', 128, 'ipv6')
ALWAYS.addSubnet('ff00::', 8, 'ipv6')
ALWAYS.addSubnet('::', 128, 'ipv6')

// Refused only with CTRL_JWKS_BLOCK_PRIVATE=true: loopback, RFC 1918, CGNAT, unique local.
const PRIVATE = new BlockList()
PRIVATE.addSubnet('127.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4')
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4')
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4')
PRIVATE.addSubnet('::1', 128, 'ipv6')
PRIVATE.addSubnet('fc00::', 7, 'ipv6')

/** Reads `::ffff:a.b.c.d` (and its hex form) as the IPv4 address it carries. */
function unmap(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const lower = address.toLowerCase()
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1]
  if (dotted !== undefined) return { address: dotted, family: 'ipv4' }
  const [, hiHex, loHex] = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower) ?? []
  if (hiHex !== undefined && loHex !== undefined) {
    const hi = Number.parseInt(hiHex, 16)
    const lo = Number.parseInt(loHex, 16)
    return { address: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, family: 'ipv4' }
  }
  return { address, family: isIP(address) === 6 ? 'ipv6' : 'ipv4' }
}

/** Why an address may not be fetched from, or undefined when it may. */
export function addressRefusal(address: string, policy: FetchPolicy): string | undefined {
  const ip = unmap(address)
  if (ALWAYS.check(ip.address, ip.family))
    return `address ${address} is in a range that is never fetched from`
  if (policy.blockPrivate && PRIVATE.check(ip.address, ip.family)) {
    return `address ${address} is private or loopback (CTRL_JWKS_BLOCK_PRIVATE=true)`
  }
  return undefined
}

/**
 * Why a URL may not be fetched from, or undefined when it may. Checks the scheme and, for an IP
 * literal host, the address; names are checked when they are resolved, at connect time.
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
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host)) return addressRefusal(host, policy)
  return undefined
}
