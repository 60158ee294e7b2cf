/**
 * IPv6 addresses that carry an IPv4 address. A packet to one of them reaches (through a
 * translator, a relay or the host's own stack) the IPv4 address inside, so the SSRF policy must
 * judge that address too: `64:ff9b::a9fe:a9fe` is the metadata service on a NAT64 network.
 */

/** The 16 bytes of an IPv6 address (zone and brackets allowed), or undefined when it is not one. */
export function ipv6Bytes(text: string): number[] | undefined {
  let s = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s)
  if (dotted) {
    const b = dotted.slice(1).map(Number)
    if (b.some((x) => x > 255)) return undefined
    const [b0 = 0, b1 = 0, b2 = 0, b3 = 0] = b
    const tail = `${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`
    s = s.slice(0, dotted.index) + tail
  }
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const groups = (part: string | undefined) => (part ? part.split(':') : [])
  const head = groups(halves[0])
  const tail = groups(halves[1])
  const missing = 8 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined
  const all = [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill('0'), ...tail]
  const bytes: number[] = []
  for (const group of all) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined
    const v = Number.parseInt(group, 16)
    bytes.push(v >> 8, v & 255)
  }
  return bytes
}

function v4(bytes: number[], at: number[]): string {
  return at.map((i) => bytes[i] ?? 0).join('.')
}

function zero(bytes: number[], from: number, to: number): boolean {
  return bytes.slice(from, to).every((b) => b === 0)
}

// RFC 6052 section 2.2: where the IPv4 address sits for each prefix length (byte 8 is skipped).
const RFC6052_AT: Record<number, number[]> = {
  48: [6, 7, 9, 10],
  56: [7, 9, 10, 11],
  64: [9, 10, 11, 12],
  96: [12, 13, 14, 15],
}

/**
 * The IPv4 addresses an IPv6 address carries, by the forms that route to them: IPv4-mapped
 * (`::ffff:0:0/96`), SIIT (`::ffff:0:0:0/96`), IPv4-compatible (`::/96`, but not `::` and `::1`),
 * NAT64 (`64:ff9b::/96`, and every RFC 6052 placement in the local-use `64:ff9b:1::/48`), 6to4
 * (`2002::/16`) and Teredo (`2001::/32`: the server, and the client with its bits inverted).
 */
export function embeddedIPv4(bytes: number[]): string[] {
  const last = [12, 13, 14, 15]
  const word = (i: number) => ((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)
  if (zero(bytes, 0, 10) && word(10) === 0xffff) return [v4(bytes, last)]
  if (zero(bytes, 0, 8) && word(8) === 0xffff && word(10) === 0) return [v4(bytes, last)]
  if (zero(bytes, 0, 12))
    return zero(bytes, 12, 15) && (bytes[15] ?? 0) <= 1 ? [] : [v4(bytes, last)]
  if (word(0) === 0x64 && word(2) === 0xff9b) {
    if (zero(bytes, 4, 12)) return [v4(bytes, last)]
    if (word(4) === 1) return Object.values(RFC6052_AT).map((at) => v4(bytes, at))
    return []
  }
  if (word(0) === 0x2002) return [v4(bytes, [2, 3, 4, 5])]
  if (word(0) === 0x2001 && word(2) === 0) {
    const client = last.map((i) => (bytes[i] ?? 0) ^ 0xff).join('.')
    return [v4(bytes, [4, 5, 6, 7]), client]
  }
  return []
}
