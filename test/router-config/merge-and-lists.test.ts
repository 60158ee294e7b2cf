import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { checkRouterConfig } from '../../src/router-config/index.js'
import { INIT_TEMPLATE } from '../../src/router-config/init-template.js'

const HEAD = `v: 3
identity:
  cert: /etc/ziti/client.cert
  key: /etc/ziti/router.key
`
const run = (yaml: string) => checkRouterConfig(yaml, {})
const where = (ps: { path: string; line: number }[]) => ps.map((p) => `${p.path}@${p.line}`)

describe('YAML merge keys (reference §1.2: anchors, aliases and << work)', () => {
  it('merges in file order as yaml.v2 does: a key after << wins, a key before it does not', () => {
    const { errors, warnings, config } = run(`${HEAD}ctrl:
  defaultRequestTimeout: 3s
  <<: &base {endpoint: "tls:ctrl:6262", defaultRequestTimeout: 9s}
link:
  dialers:
    - &d {binding: transport, split: false}
    - <<: *d
      groups: [b]
    - <<: [{binding: transport, split: true, groups: [x]}, *d]
      groups: [c]
forwarder:
  <<: {linkDialWorkerCount: 1, linkDialQueueLength: 7}
  linkDialWorkerCount: 40
`)
    expect(errors).toEqual([])
    expect(warnings.map((w) => w.message).join('\n')).not.toMatch(/Symbol|<<|duplicate/)
    expect(config?.ctrl.endpoint).toBe('tls:ctrl:6262')
    // Written before the merge, the map's own value is replaced by the merged one.
    expect(config?.ctrl.defaultRequestTimeout).toBe('9s')
    expect(config?.forwarder).toMatchObject({ linkDialWorkerCount: 40, linkDialQueueLength: 7 })
    expect(config?.link?.dialers.map((d) => [d.binding, d.split, d.groups])).toEqual([
      ['transport', false, ['default']],
      ['transport', false, ['b']],
      // Of a list of maps, the earlier wins: split from the first, groups from the map itself.
      ['transport', true, ['c']],
    ])
  })

  it('checks the value a merge puts over the one written before it', () => {
    const { errors } = run(`${HEAD}ctrl: {endpoint: "tls:ctrl:6262"}
x-fw: &fw {linkDialWorkerCount: 0}
forwarder:
  linkDialWorkerCount: 32
  <<: *fw
`)
    expect(where(errors)).toEqual(['forwarder.linkDialWorkerCount@6'])
  })

  it('checks merged values at the path they are merged into', () => {
    const { errors } = run(`${HEAD}ctrl:
  endpoint: tls:ctrl:6262
link:
  dialers:
    - &d {binding: transport, split: maybe}
    - <<: *d
`)
    expect(where(errors)).toEqual(['link.dialers[0].split@9', 'link.dialers[1].split@9'])
  })

  it('refuses a merge of anything but maps, by its place', () => {
    const { errors } = run(`${HEAD}ctrl:
  endpoint: tls:ctrl:6262
  <<: 5
`)
    expect(where(errors)).toEqual(['ctrl.<<@7'])
    expect(errors[0]?.message).toMatch(/merge key takes a map/)
  })

  it('a quoted "<<" is an ordinary (unknown) key, not a merge', () => {
    const { errors, warnings } = run(`${HEAD}ctrl:
  endpoint: tls:ctrl:6262
  "<<": {bind: eth0}
`)
    expect(errors).toEqual([])
    expect(where(warnings).filter((w) => w.startsWith('ctrl'))).toEqual(['ctrl.<<@7'])
  })

  it('what a merge key expands counts against the expansion budget', () => {
    // Each level merges the one before nine times: 9^9 maps to read, in a few hundred bytes.
    const lines = [HEAD, 'a0: &a0 {x: 1, y: 2}']
    for (let i = 1; i <= 9; i++)
      lines.push(
        `a${i}: &a${i} {<<: [${Array(9)
          .fill(`*a${i - 1}`)
          .join(', ')}]}`,
      )
    const { errors } = run(`${lines.join('\n')}\n`)
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/expands to more than 100000 values/),
    ])
  })
})

describe('a list with an item of the wrong type', () => {
  it('names every later item by its own index and line', () => {
    const { errors } = run(`${HEAD}ctrl:
  endpoints:
    - tls:a:1
    - 3
    - tls:h
    - foo:h:1
`)
    expect(where(errors)).toEqual([
      'ctrl.endpoints[1]@8',
      'ctrl.endpoints[2]@9',
      'ctrl.endpoints[3]@10',
    ])
  })

  it('in a proxy tunnel services list and in the csr SANs too', () => {
    const { errors } = run(`${HEAD}ctrl:
  endpoint: tls:ctrl:6262
listeners:
  - binding: tunnel
    options:
      mode: proxy
      services: [a:1, 5, "e:0"]
  - {binding: edge, address: "tls:0.0.0.0:3022", options: {advertise: "r:3022"}}
edge:
  csr:
    sans:
      dns: [a, 5, '']
`)
    expect(where(errors)).toEqual([
      'listeners[0].options.services[1]@11',
      'listeners[0].options.services[2]@11',
      'edge.csr.sans.dns[1]@16',
      'edge.csr.sans.dns[2]@16',
    ])
  })
})

describe('the edge section and its listener (reference §2.7)', () => {
  const edge = 'edge:\n  csr:\n    sans: {dns: [r.example.com]}\n'
  const ctrl = 'ctrl: {endpoint: "tls:ctrl:6262"}\n'
  it.each([
    ['no listeners at all', '', 1, /needs listeners/],
    ['listeners left empty', 'listeners:\n', 9, /needs listeners/],
    [
      'only a transport listener',
      'listeners:\n  - {binding: transport, address: "tls:0.0.0.0:1", options: {advertise: "r:1"}}\n',
      10,
      /binding: edge/,
    ],
  ])('%s is an error', (_name, listeners, line, message) => {
    const { errors, warnings } = run(`${HEAD}${ctrl}${edge}${listeners}`)
    expect(where(errors)).toEqual([`listeners@${line}`])
    expect(errors[0]?.message).toMatch(message)
    expect(where(warnings)).not.toContain('listeners@1')
  })

  it('an edge listener among others is enough, and without edge no listener is needed', () => {
    const listener =
      '  - {binding: edge, address: "tls:0.0.0.0:3022", options: {advertise: "r:3022"}}\n'
    expect(run(`${HEAD}${ctrl}${edge}listeners:\n  - binding: tunnel\n${listener}`).errors).toEqual(
      [],
    )
    expect(run(`${HEAD}${ctrl}`).errors).toEqual([])
  })
})

describe('channel options (reference §2.3)', () => {
  const listener =
    'listeners:\n  - binding: edge\n    address: tls:0.0.0.0:3022\n    options:\n      advertise: r:3022\n'
  const edge = 'edge:\n  csr:\n    sans: {dns: [r]}\n'
  it('ctrl.options out of bounds, or a bad writeTimeout, is an error; a non-integer count a warning', () => {
    const { errors, warnings } = run(`${HEAD}ctrl:
  endpoint: tls:ctrl:6262
  options:
    connectTimeoutMs: 10
    maxQueuedConnects: 0
    maxOutstandingConnects: 2000
    writeTimeout: zz
    outQueueSize: 16
    bogus: 1
    connectTimeoutMs2: x
`)
    expect(where(errors)).toEqual([
      'ctrl.options.connectTimeoutMs@8',
      'ctrl.options.maxQueuedConnects@9',
      'ctrl.options.maxOutstandingConnects@10',
      'ctrl.options.writeTimeout@11',
    ])
    expect(errors[0]?.message).toMatch(/from 30 to 60000/)
    expect(where(warnings).filter((w) => w.startsWith('ctrl'))).toEqual([])
    const typed = run(
      `${HEAD}ctrl:\n  endpoint: tls:ctrl:6262\n  options:\n    connectTimeoutMs: "5000"\n    writeTimeout: 5\n`,
    )
    expect(where(typed.warnings).filter((w) => w.startsWith('ctrl'))).toEqual([
      'ctrl.options.connectTimeoutMs@8',
    ])
    expect(where(typed.errors)).toEqual(['ctrl.options.writeTimeout@9'])
  })

  it('in range, nothing is said, and the options are kept', () => {
    const { errors, warnings, config } = run(
      `${HEAD}ctrl:\n  endpoint: tls:ctrl:6262\n  options: {connectTimeoutMs: 30, maxQueuedConnects: 5000, maxOutstandingConnects: 1, writeTimeout: 10s}\n`,
    )
    expect(errors).toEqual([])
    expect(where(warnings).filter((w) => w.startsWith('ctrl'))).toEqual([])
    expect(config?.ctrl.options).toMatchObject({ connectTimeoutMs: 30, writeTimeout: '10s' })
  })

  it('an edge listener refuses them too; on a link they are warnings', () => {
    const { errors, warnings } = run(`${HEAD}ctrl: {endpoint: "tls:ctrl:6262"}
${edge}${listener}      connectTimeoutMs: 70000
link:
  listeners:
    - {binding: transport, bind: "tls:0.0.0.0:1", advertise: "tls:r:1", options: {connectTimeoutMs: "x"}}
  dialers:
    - {binding: transport, options: {maxQueuedConnects: 99999}}
`)
    expect(where(errors)).toEqual(['listeners[0].options.connectTimeoutMs@14'])
    expect(where(warnings).filter((w) => w.startsWith('link'))).toEqual([
      'link.listeners[0].options.connectTimeoutMs@17',
      'link.dialers[0].options.maxQueuedConnects@19',
    ])
  })
})

describe('fields that may not be empty, and ignored ones', () => {
  const ctrl = 'ctrl: {endpoint: "tls:ctrl:6262"}\n'
  const edgeWith = (extra: string) =>
    `${HEAD}${ctrl}listeners:\n  - {binding: edge, address: "tls:0.0.0.0:3022", options: {advertise: "r:3022"}}\nedge:\n  csr: {sans: {dns: [r]}}\n${extra}`

  it('trace.path and profile paths must not be empty', () => {
    const { errors } = run(`${HEAD}${ctrl}trace: {path: ""}\nprofile:\n  cpu: {path: ""}\n`)
    expect(where(errors)).toEqual(['trace.path@6', 'profile.cpu.path@8'])
    expect(errors[0]?.message).toMatch(/empty/)
  })

  it('edge.apiProxy needs a listener and an upstream, non-empty strings', () => {
    expect(where(run(edgeWith('  apiProxy: {listener: 5, upstream: ""}\n')).errors)).toEqual([
      'edge.apiProxy.listener@10',
      'edge.apiProxy.upstream@10',
    ])
    expect(where(run(edgeWith('  apiProxy: 5\n')).errors)).toEqual(['edge.apiProxy@10'])
    expect(
      run(edgeWith('  apiProxy: {listener: "0.0.0.0:1080", upstream: "ctrl:1280"}\n')).errors,
    ).toEqual([])
  })

  it('an empty edge.db, an empty forwarder and health-checks API options are warnings', () => {
    const db = run(edgeWith('  db: ""\n'))
    expect(db.errors).toEqual([])
    expect(where(db.warnings).filter((w) => w.startsWith('edge'))).toEqual(['edge.db@10'])
    const forwarder = run(`${HEAD}${ctrl}forwarder:\n`)
    expect(where(forwarder.warnings)).toContain('forwarder@6')
    expect(forwarder.config?.forwarder.linkDialQueueLength).toBe(1000)
    const web = run(`${HEAD}${ctrl}web:
  - name: health
    bindPoints: [{interface: "0.0.0.0:8081", address: "r:8081"}]
    apis: [{binding: health-checks, options: {a: 1}}]
`)
    expect(web.errors).toEqual([])
    expect(where(web.warnings).filter((w) => w.startsWith('web'))).toEqual([
      'web[0].apis[0].options.a@9',
    ])
  })
})

describe('a listener that says the same thing twice', () => {
  it('warns that bind and the top-level advertise are ignored, and uses address and options.advertise', () => {
    const { errors, warnings, config } = run(`${HEAD}ctrl: {endpoint: "tls:ctrl:6262"}
edge:
  csr: {sans: {dns: [r]}}
listeners:
  - binding: edge
    bind: tls:0.0.0.0:3023
    address: tls:0.0.0.0:3024
    advertise: r:3025
    options:
      advertise: r:3023
`)
    expect(errors).toEqual([])
    expect(where(warnings).filter((w) => w.startsWith('listeners'))).toEqual([
      'listeners[0].bind@10',
      'listeners[0].advertise@12',
    ])
    expect(config?.listeners?.[0]).toMatchObject({
      address: 'tls:0.0.0.0:3024',
      options: { advertise: 'r:3023' },
    })
    expect(config?.listeners?.[0]?.advertise).toBeUndefined()
  })
})

describe('messages that name the real cause', () => {
  it('a value from the environment is a string, not a number, and the message says so', () => {
    const { errors } = checkRouterConfig(
      `v: \${VER}\nidentity: {cert: c, key: k}\nctrl:\n  endpoint: tls:ctrl:6262\nforwarder:\n  linkDialQueueLength: \${N}\n`,
      { VER: '3', N: '10' },
    )
    expect(where(errors)).toEqual(['v@1', 'forwarder.linkDialQueueLength@6'])
    expect(errors[0]?.message).toMatch(/from the environment is always a string: write v: 3/)
    expect(errors[0]?.message).not.toMatch(/quotes/)
    expect(errors[1]?.message).toMatch(/from the environment is always a string/)
    expect(
      run(`${HEAD.replace('v: 3', 'v: "3"')}ctrl: {endpoint: "tls:c:1"}\n`).errors[0]?.message,
    ).toMatch(/remove the quotes/)
  })

  it('an extra colon is not called an IPv6 host, nor is a protocol where none belongs', () => {
    const { errors } = run(`${HEAD}ctrl:
  endpoint: tls:h:1:2
web:
  - name: w
    bindPoints: [{interface: "tls:h:1", address: "h:1"}]
    apis: [{binding: health-checks}]
`)
    expect(where(errors)).toEqual(['ctrl.endpoint@6', 'web[0].bindPoints[0].interface@9'])
    expect(errors[0]?.message).toMatch(/too many colons/)
    expect(errors[1]?.message).toMatch(/without tls:/)
    const v6 = run(`${HEAD}ctrl:\n  endpoint: "tls:::1:6262"\n`).errors
    expect(v6[0]?.message).toMatch(/IPv6 host must be in brackets/)
  })
})

describe('the effective configuration checks again as it was printed', () => {
  it.each([
    ['the init template', INIT_TEMPLATE],
    [
      'a listener written as the specification lists it (bind, advertise beside it)',
      `${HEAD}ctrl: {endpoint: "tls:ctrl:6262"}\nedge:\n  csr: {sans: {dns: [r]}}\nlisteners:\n  - {binding: edge, bind: "tls:0.0.0.0:3022", advertise: "r:3022"}\n`,
    ],
  ])('%s: no error and no warning the first file did not have', (_name, text) => {
    const first = checkRouterConfig(text, {})
    expect(first.errors).toEqual([])
    const again = checkRouterConfig(stringify(first.config), {})
    expect(again.errors).toEqual([])
    const messages = (r: typeof first) => r.warnings.map((w) => `${w.path}: ${w.message}`)
    expect(messages(again).filter((m) => !messages(first).includes(m))).toEqual([])
  })
})
