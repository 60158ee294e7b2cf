import { describe, expect, it } from 'vitest'
import { checkRouterConfig } from '../../src/router-config/index.js'

const BASE = 'v: 3\nidentity: {cert: /a, key: /b}\nctrl: {endpoint: "tls:a:1"}\n'
const run = (yaml: string) => checkRouterConfig(yaml, {})
const paths = (ps: { path: string }[]) => ps.map((p) => p.path)

describe('addresses (reference §1.6: tls, dtls, tcp, ws, wss, udp)', () => {
  it('transport: is a binding, not an address protocol', () => {
    const r = run(BASE.replace('"tls:a:1"', '"transport:ctrl.example.com:6262"'))
    expect(paths(r.errors)).toEqual(['ctrl.endpoint'])
    const link = run(
      `${BASE}link:\n  listeners:\n    - {binding: transport, bind: "transport:0.0.0.0:1", advertise: "transport:r:1"}\n`,
    )
    expect(paths(link.errors)).toEqual(['link.listeners[0].bind', 'link.listeners[0].advertise'])
    // Bindings named transport are unaffected.
    const bindings = run(
      `${BASE}dialers: [{binding: transport}]\nlisteners: [{binding: transport, address: "tls:0.0.0.0:1", advertise: "r:1"}]\nlink:\n  dialers: [{binding: transport}]\n`,
    )
    expect(bindings.errors).toEqual([])
  })
})

describe('ctrl.endpoints beside ctrl.endpoint (seed: endpoints is ignored)', () => {
  it('is a warning only, whatever its items hold', () => {
    for (const endpoints of ['[nonsense, 5, "tls:b"]', '"not a list"', '{a: 1}']) {
      const r = run(BASE.replace('"tls:a:1"}', `"tls:a:1", endpoints: ${endpoints}}`))
      expect(r.errors, endpoints).toEqual([])
      expect(paths(r.warnings)).toContain('ctrl.endpoints')
      expect(r.config?.ctrl.endpoints).toBeUndefined()
    }
    const alone = run(BASE.replace('endpoint: "tls:a:1"', 'endpoints: [nonsense]'))
    expect(paths(alone.errors)).toEqual(['ctrl.endpoints[0]'])
  })
})

describe('forwarder times (reference §2.4)', () => {
  it('unresponsiveLinkTimeout takes an integer of milliseconds or a duration, at least 5s', () => {
    for (const ok of ['60000', '5000', '1m', '5s']) {
      const r = run(`${BASE}forwarder: {unresponsiveLinkTimeout: ${ok}}\n`)
      expect(r.errors, ok).toEqual([])
    }
    for (const bad of ['4999', '1s', '-1', '60000.0', '"10"']) {
      const r = run(`${BASE}forwarder: {unresponsiveLinkTimeout: ${bad}}\n`)
      expect(paths(r.errors), bad).toEqual(['forwarder.unresponsiveLinkTimeout'])
    }
  })

  it('a negative millisecond value is kept, with a warning; counts keep the seed bounds', () => {
    const r = run(`${BASE}forwarder: {faultTxInterval: -1, xgressDialDwellTime: -5}\n`)
    expect(r.errors).toEqual([])
    expect(paths(r.warnings)).toEqual(
      expect.arrayContaining(['forwarder.faultTxInterval', 'forwarder.xgressDialDwellTime']),
    )
    expect(r.config?.forwarder.faultTxInterval).toBe(-1)
    expect(r.config?.forwarder.xgressDialDwellTime).toBe(-5)
    const counts = run(`${BASE}forwarder: {linkDialQueueLength: 0, xgressDialWorkerCount: -1}\n`)
    expect(paths(counts.errors)).toEqual([
      'forwarder.linkDialQueueLength',
      'forwarder.xgressDialWorkerCount',
    ])
  })
})

describe('aliases (reference §1.2: anchors and aliases work)', () => {
  it('120 link dialers sharing their groups by an alias pass', () => {
    const dialers = Array.from({ length: 120 }, () => '    - {binding: transport, groups: *g}')
    const r = run(
      `${BASE}x-groups: &g [public, private]\nlink:\n  dialers:\n${dialers.join('\n')}\n`,
    )
    expect(r.errors).toEqual([])
    expect(r.config?.link?.dialers).toHaveLength(120)
    expect(r.config?.link?.dialers[119]?.groups).toEqual(['public', 'private'])
  })
})

describe('web identity (reference §3: cert, server_cert, key and ca required)', () => {
  const web = (identity: string) =>
    run(
      `${BASE}web:\n  - name: health\n    bindPoints: [{interface: "127.0.0.1:8081", address: "127.0.0.1:8081"}]\n    apis: [{binding: health-checks}]\n    identity: ${identity}\n`,
    )

  it('names each one missing', () => {
    const r = web('{cert: /a.pem, key: /b.pem}')
    expect(paths(r.errors)).toEqual(['web[0].identity.server_cert', 'web[0].identity.ca'])
    expect(r.errors[0]?.message).toMatch(/server_cert is required/)
    expect(paths(web('{}').errors)).toEqual([
      'web[0].identity.cert',
      'web[0].identity.server_cert',
      'web[0].identity.key',
      'web[0].identity.ca',
    ])
    expect(web('{cert: /a, server_cert: /s, key: /b, ca: /c}').errors).toEqual([])
  })
})

describe('temporary directories (reference §1.3)', () => {
  it('TMPDIR, TMP and TEMP expand to the temp dir even when unset: $TMPDIR, else /tmp', () => {
    const yaml = `${BASE}trace: {path: "\${TMPDIR}/a \${TMP}/b \${TEMP}/c"}\n`
    const unset = checkRouterConfig(yaml, {})
    expect(unset.config?.trace?.path).toBe('/tmp/a /tmp/b /tmp/c')
    expect(unset.warnings.map((w) => w.message)).not.toContainEqual(
      expect.stringMatching(/environment variable/),
    )
    const set = checkRouterConfig(yaml, { TMPDIR: '/scratch', TMP: '/ignored' })
    expect(set.config?.trace?.path).toBe('/scratch/a /scratch/b /scratch/c')
  })
})
