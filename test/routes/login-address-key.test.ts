import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { addressKey, LoginLimiter } from '../../src/routes/rate-limit.js'

describe('the login limit bucket of a client address', () => {
  it.each([
    ['192.0.2.7', '192.0.2.7'],
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['0:0:0:0:0:ffff:c000:207', '192.0.2.7'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:DB8:0:0:ffff:ffff:ffff:ffff', '2001:db8:0:0::/64'],
    ['2001:db8:0:1::1', '2001:db8:0:1::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['2001:db8:1:2:3:4:1.2.3.4', '2001:db8:1:2::/64'],
    // IPv4 clients through a translator count by their IPv4 address.
    ['64:ff9b::192.0.2.7', '192.0.2.7'],
    ['64:ff9b::c000:207', '192.0.2.7'],
    ['::ffff:0:192.0.2.7', '192.0.2.7'],
    // A balancer that writes the client's port: the port is not part of the client.
    ['192.0.2.7:5555', '192.0.2.7'],
    ['[2001:db8::1]:443', '2001:db8:0:0::/64'],
    ['[::ffff:192.0.2.7]:80', '192.0.2.7'],
    // Not an address at all (a peer that left before the hook ran): one bucket, no crash.
    ['unknown', 'unknown'],
  ])('%s is counted as %s', (ip, key) => {
    expect(addressKey(ip)).toBe(key)
  })

  it('a request whose peer already left has a bucket too', () => {
    expect(addressKey(undefined)).toBe('')
    const limiter = new LoginLimiter({ perAddress: 1, perIdentity: 0 }, () => new Date(0))
    expect(() => limiter.address(undefined)).not.toThrow()
  })

  it('every address of one /64 shares one allowance; another /64 has its own', () => {
    const limiter = new LoginLimiter({ perAddress: 1, perIdentity: 0 }, () => new Date(0))
    limiter.address('2001:db8:0:1::1')
    expect(() => limiter.address('2001:db8:0:1::2')).toThrow(
      expect.objectContaining({ code: 'RATE_LIMITED' }),
    )
    expect(() => limiter.address('2001:db8:0:2::1')).not.toThrow()
    limiter.address('192.0.2.1')
    expect(() => limiter.address('::ffff:192.0.2.1')).toThrow(
      expect.objectContaining({ code: 'RATE_LIMITED' }),
    )
  })

  it('any IPv6 address in any written form maps to the /64 of its first four groups', () => {
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        const key = addressKey(ip)
        if (key.includes('.')) return // an IPv4-mapped address
        const canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1)
        expect(addressKey(canonical)).toBe(key)
        expect(key).toMatch(/^([0-9a-f]{1,4}:){4}:\/64$/)
      }),
    )
  })
})
