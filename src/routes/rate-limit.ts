import { isIP } from 'node:net'
import { AppError } from '../errors.js'
import { ipv6Bytes } from '../jwt/ipv6-embedded.js'

// Keys tracked at most per limiter; beyond, the least recently refilled is forgotten (a key
// forgotten starts again with a full bucket, so this bounds memory, never tightens a limit).
const MAX_KEYS = 100_000

interface Bucket {
  tokens: number
  at: number
}

/**
 * Token buckets by key: each holds at most `perSecond` tokens and regains `perSecond` a second,
 * so no one-second span lets more than twice the rate through and a steady client gets the rate
 * (unlike a fixed window, there is no boundary at which a full second's worth comes twice).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>()

  constructor(
    private readonly perSecond: number,
    private readonly clock: () => Date,
  ) {}

  /** Takes one token for `key`: 0 when granted, otherwise the seconds until one is available. */
  take(key: string): number {
    const now = this.clock().getTime()
    const bucket = this.buckets.get(key)
    let tokens = this.perSecond
    if (bucket) {
      this.buckets.delete(key) // re-inserted below: the map stays in order of last use
      tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond)
    } else if (this.buckets.size >= MAX_KEYS) {
      const oldest = this.buckets.keys().next().value as string // the map is not empty
      this.buckets.delete(oldest)
    }
    const granted = tokens >= 1
    this.buckets.set(key, { tokens: granted ? tokens - 1 : tokens, at: now })
    return granted ? 0 : Math.max(1, Math.ceil((1 - tokens) / this.perSecond))
  }
}

/** Login rates, per second; 0 turns a limit off. */
export interface LoginLimits {
  perAddress: number
  perIdentity: number
}

/**
 * The login rate limits of one controller process: one instance is shared by the login routes of
 * both API prefixes, so a client gets the same allowance whichever prefix it uses. Counts are per
 * instance (each instance of a cluster keeps its own).
 */
export class LoginLimiter {
  private readonly addresses: TokenBuckets | undefined
  private readonly names: TokenBuckets | undefined

  constructor(limits: LoginLimits, clock: () => Date) {
    this.addresses = limits.perAddress > 0 ? new TokenBuckets(limits.perAddress, clock) : undefined
    this.names = limits.perIdentity > 0 ? new TokenBuckets(limits.perIdentity, clock) : undefined
  }

  /** Before anything else of a login: the client address's allowance (an IPv6 client's /64). */
  address(ip: string | undefined): void {
    if (this.addresses) refuseIfWaiting(this.addresses.take(addressKey(ip)))
  }

  /**
   * The allowance of one identity or user name (`name:` for a password login's user name, before
   * any hashing; `id:` for an identity a token named).
   */
  identity(key: string): void {
    refuseIfWaiting(this.names?.take(key) ?? 0)
  }
}

function refuseIfWaiting(seconds: number): void {
  if (seconds > 0) {
    throw new AppError('RATE_LIMITED', { headers: { 'retry-after': String(seconds) } })
  }
}

/**
 * An address as a balancer may write it in X-Forwarded-For with the client's port
 * (`192.0.2.1:5555`, `[2001:db8::1]:443`), without the port: each port must not be a client.
 */
function withoutPort(ip: string): string {
  if (isIP(ip) !== 0) return ip
  const v6 = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(ip)
  if (v6?.[1] && isIP(v6[1].split('%')[0] ?? '') === 6) return v6[1]
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(ip)
  if (v4?.[1] && isIP(v4[1]) === 4) return v4[1]
  return ip
}

/**
 * The client address a login is counted by: the request's (from X-Forwarded-For when a trusted
 * balancer sent it), or the connection's when that is not an IP address at all (any text a client
 * put in the header would otherwise be a bucket of its own, a fresh allowance each time).
 */
export function clientAddress(request: {
  ip: string | undefined
  socket?: { remoteAddress?: string | undefined } | undefined
}): string | undefined {
  const ip = request.ip
  if (ip !== undefined && isIP(withoutPort(ip).split('%')[0] ?? '') !== 0) return ip
  return request.socket?.remoteAddress
}

/**
 * The bucket of a client address: an IPv4 address as it is (an IPv4-mapped IPv6 one too), an
 * IPv6 address by its /64, the smallest network one subscriber is given: every address of it is
 * one client's to rotate through, and would otherwise each get a fresh allowance.
 */
export function addressKey(ip: string | undefined): string {
  // A peer gone before the hook ran has no address: all such share one bucket.
  const bare = withoutPort(ip ?? '')
  const address = bare.split('%')[0] ?? bare // without a zone index
  if (isIP(address) !== 6) return bare
  const bytes = ipv6Bytes(address) ?? []
  const g = Array.from(
    { length: 8 },
    (_, i) => ((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0),
  )
  // An IPv4 client as IPv6 (mapped, SIIT-translated, or through NAT64's well-known prefix) is
  // counted by its IPv4 address, not with every other such client in one /64.
  const mapped = g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff
  const siit = g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)
  if (mapped || siit || nat64) {
    const [hi = 0, lo = 0] = g.slice(6)
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.')
  }
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`
}
