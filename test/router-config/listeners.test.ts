import { describe, expect, it } from 'vitest'
import { checkRouterConfig } from '../../src/router-config/index.js'

const BASE = 'v: 3\nidentity: {cert: /a, key: /b}\nctrl: {endpoint: "tls:a:1"}\n'
/** A file whose listeners section is `items` (YAML list items, one a line). */
const listeners = (...items: string[]) =>
  checkRouterConfig(`${BASE}listeners:\n${items.map((i) => `  - ${i}\n`).join('')}`, {})
const paths = (ps: { path: string }[]) => ps.map((p) => p.path)
const tunnel = (options: string) => listeners(`{binding: tunnel, options: {${options}}}`)

describe('tunnel listeners (reference §4)', () => {
  it('without mode, a tunnel is tproxy, the router code default, and tproxy options apply', () => {
    const r = tunnel('resolver: "udp://127.0.0.1:53", dnsSvcIpRange: 100.64.0.1/10')
    expect(r.errors).toEqual([])
    expect(r.warnings.filter((w) => w.path.startsWith('listeners'))).toEqual([])
    expect(r.config?.listeners?.[0]?.options?.mode).toBe('tproxy')
    expect(paths(tunnel('dnsSvcIpRange: 100.64.0.1/40').errors)).toEqual([
      'listeners[0].options.dnsSvcIpRange',
    ])
  })

  it('tproxy:<diverter> is tproxy', () => {
    const r = tunnel('mode: "tproxy:/opt/diverter", resolver: "udp://127.0.0.1:53"')
    expect(r.errors).toEqual([])
    expect(r.config?.listeners?.[0]?.options?.mode).toBe('tproxy:/opt/diverter')
    expect(paths(tunnel('mode: "tproxy:x", services: [web:80]').warnings)).toContain(
      'listeners[0].options.services',
    )
  })

  it('an option of another mode is ignored with a warning, not an error', () => {
    for (const [options, path, mode] of [
      ['mode: host, resolver: "udp://127.0.0.1:53"', 'resolver', 'host'],
      ['mode: proxy, services: [web:80], dnsSvcIpRange: 100.64.0.1/10', 'dnsSvcIpRange', 'proxy'],
      ['mode: tproxy, services: [web:80]', 'services', 'tproxy'],
      ['mode: host, services: [web:80]', 'services', 'host'],
    ] as const) {
      const r = tunnel(options)
      expect(r.errors, options).toEqual([])
      const warning = r.warnings.find((w) => w.path === `listeners[0].options.${path}`)
      expect(warning?.message).toMatch(new RegExp(`ignored in mode ${mode}`))
    }
  })

  it('a resolver the router cannot use is a warning: it logs it and uses a dummy resolver', () => {
    for (const resolver of ['127.0.0.1', 'tcp://127.0.0.1:53', 'udp://127.0.0.1:53?bogus']) {
      const r = tunnel(`resolver: "${resolver}"`)
      expect(r.errors, resolver).toEqual([])
      expect(paths(r.warnings)).toContain('listeners[0].options.resolver')
    }
  })

  it('accepts the resolver query forms: unanswerable=, response= and a bare keyword', () => {
    for (const resolver of [
      'udp://127.0.0.1:53?unanswerable=servfail',
      'udp://127.0.0.1:53?response=refused',
      'udp://127.0.0.1:53?timeout',
      'udp://127.0.0.1:53?SERVFAIL',
      'file:///etc/hosts',
    ]) {
      const r = tunnel(`mode: tproxy, resolver: "${resolver}"`)
      expect(r.errors, resolver).toEqual([])
      expect(paths(r.warnings), resolver).not.toContain('listeners[0].options.resolver')
    }
  })
})

describe('proxy listeners (reference §2.7)', () => {
  it('proxy and proxy_udp need a top-level service string', () => {
    for (const binding of ['proxy', 'proxy_udp']) {
      const without = listeners(
        `{binding: ${binding}, address: "tcp:0.0.0.0:8080", advertise: "h:8080"}`,
      )
      expect(paths(without.errors)).toEqual(['listeners[0].service'])
      expect(without.errors[0]?.message).toMatch(/service is required/)
      const empty = listeners(
        `{binding: ${binding}, address: "tcp:0.0.0.0:8080", advertise: "h:8080", service: ""}`,
      )
      expect(paths(empty.errors)).toEqual(['listeners[0].service'])
      const good = listeners(
        `{binding: ${binding}, address: "tcp:0.0.0.0:8080", advertise: "h:8080", service: web}`,
      )
      expect(good.errors).toEqual([])
      expect(good.config?.listeners?.[0]?.service).toBe('web')
    }
  })
})

describe('edge listeners (reference §2.7)', () => {
  const edge = (address: string, advertise: string) =>
    checkRouterConfig(
      `${BASE}edge: {csr: {sans: {dns: [r1.example.com]}}}\nlisteners:\n  - {binding: edge, address: "${address}", options: {advertise: "${advertise}"}}\n`,
      {},
    )

  it('options.advertise is host:port: a protocol or an IPv6 address is an error', () => {
    expect(edge('tls:0.0.0.0:3022', 'r1.example.com:3022').errors).toEqual([])
    for (const advertise of [
      'tls:r1.example.com:3022',
      '[2001:db8::1]:3022',
      '2001:db8::1:3022',
      'r1.example.com',
    ]) {
      const r = edge('tls:0.0.0.0:3022', advertise)
      expect(paths(r.errors), advertise).toEqual(['listeners[0].options.advertise'])
    }
  })

  it('a bracketed IPv6 address to listen on is an error too; link listeners keep theirs', () => {
    expect(paths(edge('tls:[::]:3022', 'r1.example.com:3022').errors)).toEqual([
      'listeners[0].address',
    ])
    const link = checkRouterConfig(
      `${BASE}link:\n  listeners:\n    - {binding: transport, bind: "tls:[::]:10080", advertise: "tls:r1.example.com:10080"}\n`,
      {},
    )
    expect(link.errors).toEqual([])
  })
})
