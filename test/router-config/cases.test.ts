import { describe, expect, it } from 'vitest'
import { checkRouterConfig } from '../../src/router-config/index.js'

/** A standard router; cases append a snippet, so its lines are BASE_LINES + n. */
const BASE = `v: 3
identity:
  cert: /etc/ziti/client.cert
  server_cert: /etc/ziti/server.cert
  key: /etc/ziti/router.key
  ca: /etc/ziti/ca.cert
ctrl:
  endpoint: tls:ctrl.example.com:6262
link:
  dialers:
    - binding: transport
  listeners:
    - binding: transport
      bind: tls:0.0.0.0:10080
      advertise: router1.example.com:10080
listeners:
  - binding: edge
    address: tls:0.0.0.0:3022
    options:
      advertise: router1.example.com:3022
dialers:
  - binding: transport
edge:
  csr:
    sans:
      dns: [router1.example.com]
`
const BASE_LINES = BASE.split('\n').length - 1
const L = (n: number) => BASE_LINES + n

type Expect = [path: string, line: number][]
interface Case {
  name: string
  yaml: string
  errors?: Expect
  warnings?: Expect
  env?: Record<string, string>
}

const run = (yaml: string, env: Record<string, string> = {}) => checkRouterConfig(yaml, env)
const located = (ps: { path: string; line: number }[]) => ps.map((p) => [p.path, p.line])

const cases: Case[] = [
  // The file as a whole
  { name: 'the standard base is clean', yaml: BASE },
  { name: 'an empty file', yaml: '', errors: [['', 1]] },
  { name: 'only comments', yaml: '# nothing\n', errors: [['', 1]] },
  { name: 'a top-level list', yaml: '- a\n- b\n', errors: [['', 1]] },
  { name: 'a top-level scalar', yaml: 'hello\n', errors: [['', 1]] },
  { name: 'not YAML at all', yaml: 'v: 3\nctrl: [unclosed\n', errors: [['', 3]] },
  { name: 'tabs for indentation', yaml: 'v: 3\nctrl:\n\tendpoint: x\n', errors: [['', 3]] },
  { name: 'a duplicate key warns with both lines', yaml: `${BASE}v: 3\n`, warnings: [['v', L(1)]] },
  {
    name: 'a second document is ignored with a warning',
    yaml: `${BASE}---\nv: 2\n`,
    warnings: [['', L(1)]],
  },
  {
    name: 'an unknown top-level key with a suggestion',
    yaml: `${BASE}forwarders: {}\n`,
    warnings: [['forwarders', L(1)]],
  },
  // v
  { name: 'v missing', yaml: BASE.replace('v: 3\n', ''), errors: [['v', 1]] },
  { name: 'v as a string', yaml: BASE.replace('v: 3', 'v: "3"'), errors: [['v', 1]] },
  { name: 'v 2', yaml: BASE.replace('v: 3', 'v: 2'), errors: [['v', 1]] },
  { name: 'v as a float', yaml: BASE.replace('v: 3', 'v: 3.5'), errors: [['v', 1]] },
  { name: 'v written in octal is still 3', yaml: BASE.replace('v: 3', 'v: 03') },
  // identity
  {
    name: 'identity missing',
    yaml: BASE.replace(/identity:\n( {2}.*\n){4}/, ''),
    errors: [['identity', 1]],
  },
  {
    name: 'identity not a map',
    yaml: BASE.replace(/identity:\n( {2}.*\n){4}/, 'identity: yes\n'),
    errors: [['identity', 2]],
  },
  {
    name: 'identity without cert',
    yaml: BASE.replace('  cert: /etc/ziti/client.cert\n', ''),
    errors: [['identity.cert', 3]],
  },
  {
    name: 'identity key as a number',
    yaml: BASE.replace('key: /etc/ziti/router.key', 'key: 42'),
    errors: [['identity.key', 5]],
  },
  {
    name: 'identity pem: without a PEM block',
    yaml: BASE.replace('ca: /etc/ziti/ca.cert', 'ca: "pem:nothing"'),
    errors: [['identity.ca', 6]],
  },
  {
    name: 'identity inline pem is fine',
    yaml: BASE.replace(
      'ca: /etc/ziti/ca.cert',
      'ca: "pem:-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----"',
    ),
  },
  {
    name: 'identity file:relative is refused',
    yaml: BASE.replace('cert: /etc/ziti/client.cert', 'cert: file:client.cert'),
    errors: [['identity.cert', 3]],
  },
  {
    name: 'identity file://host/path is refused',
    yaml: BASE.replace('cert: /etc/ziti/client.cert', 'cert: file://etc/ziti/client.cert'),
    errors: [['identity.cert', 3]],
  },
  {
    name: 'identity file:/// URL is fine',
    yaml: BASE.replace('cert: /etc/ziti/client.cert', 'cert: file:///etc/ziti/client.cert'),
  },
  {
    name: 'identity key from an engine is fine',
    yaml: BASE.replace('key: /etc/ziti/router.key', 'key: pkcs11:///usr/lib/softhsm.so?id=01'),
  },
  {
    name: 'identity unknown key',
    yaml: BASE.replace('  ca: /etc/ziti/ca.cert', '  ca: /etc/ziti/ca.cert\n  server_crt: x'),
    warnings: [['identity.server_crt', 7]],
  },
  // ctrl
  {
    name: 'ctrl missing',
    yaml: BASE.replace('ctrl:\n  endpoint: tls:ctrl.example.com:6262\n', ''),
    errors: [['ctrl', 1]],
  },
  {
    name: 'ctrl without endpoint',
    yaml: BASE.replace('  endpoint: tls:ctrl.example.com:6262', '  bind: eth0'),
    errors: [['ctrl.endpoint', 8]],
  },
  {
    name: 'ctrl endpoint without protocol',
    yaml: BASE.replace('tls:ctrl.example.com:6262', 'ctrl.example.com:6262'),
    errors: [['ctrl.endpoint', 8]],
  },
  {
    name: 'ctrl endpoint port out of range',
    yaml: BASE.replace('tls:ctrl.example.com:6262', 'tls:ctrl.example.com:70000'),
    errors: [['ctrl.endpoint', 8]],
  },
  {
    name: 'ctrl endpoint IPv6 without brackets',
    yaml: BASE.replace('tls:ctrl.example.com:6262', 'tls:::1:6262'),
    errors: [['ctrl.endpoint', 8]],
  },
  {
    name: 'ctrl endpoint IPv6 in brackets',
    yaml: BASE.replace('tls:ctrl.example.com:6262', 'tls:[::1]:6262'),
  },
  {
    name: 'ctrl endpoint and endpoints: endpoints ignored',
    yaml: BASE.replace(
      '  endpoint: tls:ctrl.example.com:6262',
      '  endpoint: tls:a:1\n  endpoints: [tls:b:2]',
    ),
    warnings: [['ctrl.endpoints', 9]],
  },
  {
    name: 'ctrl endpoints only',
    yaml: BASE.replace(
      '  endpoint: tls:ctrl.example.com:6262',
      '  endpoints:\n    - tls:a.example:6262\n    - wss:b.example:443',
    ),
  },
  {
    name: 'ctrl with an empty endpoints list and no endpoint',
    yaml: BASE.replace('  endpoint: tls:ctrl.example.com:6262', '  endpoints: []'),
    errors: [['ctrl.endpoint', 8]],
  },
  {
    name: 'ctrl endpoints with a bad item',
    yaml: BASE.replace(
      '  endpoint: tls:ctrl.example.com:6262',
      '  endpoints:\n    - tls:a.example:6262\n    - b.example',
    ),
    errors: [['ctrl.endpoints[1]', 10]],
  },
  {
    name: 'ctrl defaultRequestTimeout without unit',
    yaml: BASE.replace(
      '  endpoint: tls:ctrl.example.com:6262',
      '  endpoint: tls:ctrl.example.com:6262\n  defaultRequestTimeout: 10',
    ),
    errors: [['ctrl.defaultRequestTimeout', 9]],
  },
  {
    name: 'ctrl defaultRequestTimeout in days',
    yaml: BASE.replace(
      '  endpoint: tls:ctrl.example.com:6262',
      '  endpoint: tls:ctrl.example.com:6262\n  defaultRequestTimeout: 1d',
    ),
    errors: [['ctrl.defaultRequestTimeout', 9]],
  },
  {
    name: 'ctrl defaultRequestTimeout with capital S',
    yaml: BASE.replace(
      '  endpoint: tls:ctrl.example.com:6262',
      '  endpoint: tls:ctrl.example.com:6262\n  defaultRequestTimeout: 30S',
    ),
    errors: [['ctrl.defaultRequestTimeout', 9]],
  },
  {
    name: 'ctrl endpoint from the environment',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference, not a template
    yaml: BASE.replace('tls:ctrl.example.com:6262', 'tls:${CTRL_HOST}:$CTRL_PORT'),
    env: { CTRL_HOST: 'c.example', CTRL_PORT: '6262' },
  },
  {
    name: 'an unset environment variable warns and empties',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference, not a template
    yaml: BASE.replace('tls:ctrl.example.com:6262', 'tls:ctrl.example.com:${NOPE}'),
    errors: [['ctrl.endpoint', 8]],
    warnings: [['ctrl.endpoint', 8]],
  },
  // forwarder
  {
    name: 'forwarder bounds',
    yaml: `${BASE}forwarder:\n  linkDialQueueLength: 0\n  rateLimitedQueueLength: 50001\n  linkDialWorkerCount: 1\n`,
    errors: [
      ['forwarder.linkDialQueueLength', L(2)],
      ['forwarder.rateLimitedQueueLength', L(3)],
    ],
  },
  {
    name: 'forwarder wrong types',
    yaml: `${BASE}forwarder:\n  faultTxInterval: 15s\n  xgressDialWorkerCount: yes\n`,
    errors: [
      ['forwarder.faultTxInterval', L(2)],
      ['forwarder.xgressDialWorkerCount', L(3)],
    ],
  },
  { name: 'forwarder not a map', yaml: `${BASE}forwarder: 5\n`, errors: [['forwarder', L(1)]] },
  {
    name: 'forwarder latencyProbeInterval accepted',
    yaml: `${BASE}forwarder:\n  latencyProbeInterval: 1000\n`,
  },
  {
    name: 'forwarder unknown key with suggestion',
    yaml: `${BASE}forwarder:\n  linkDialQueueLenght: 5\n`,
    warnings: [['forwarder.linkDialQueueLenght', L(2)]],
  },
  // healthChecks and metrics
  {
    name: 'healthChecks durations',
    yaml: `${BASE}healthChecks:\n  ctrlPingCheck:\n    interval: 30\n  linkCheck:\n    minLinks: -1\n`,
    errors: [
      ['healthChecks.ctrlPingCheck.interval', L(3)],
      ['healthChecks.linkCheck.minLinks', L(5)],
    ],
  },
  {
    name: 'metrics',
    yaml: `${BASE}metrics:\n  reportInterval: 0s\n  messageQueueSize: many\n`,
    errors: [
      ['metrics.reportInterval', L(2)],
      ['metrics.messageQueueSize', L(3)],
    ],
  },
  // link
  {
    name: 'link listener without binding, bind and advertise',
    yaml: BASE.replace(
      / {4}- binding: transport\n {6}bind: tls:0.0.0.0:10080\n {6}advertise: router1.example.com:10080\n/,
      '    - groups: [a]\n',
    ),
    errors: [
      ['link.listeners[0].advertise', 13],
      ['link.listeners[0].binding', 13],
      ['link.listeners[0].bind', 13],
    ],
  },
  {
    name: 'link listener with another binding',
    yaml: BASE.replace('    - binding: transport\n      bind', '    - binding: udp\n      bind'),
    errors: [['link.listeners[0].binding', 13]],
  },
  {
    name: 'link listener advertise as a full address',
    yaml: BASE.replace(
      'advertise: router1.example.com:10080',
      'advertise: tls:router1.example.com:10080',
    ),
  },
  {
    name: 'link listener advertise without port',
    yaml: BASE.replace('advertise: router1.example.com:10080', 'advertise: router1.example.com'),
    errors: [['link.listeners[0].advertise', 15]],
  },
  {
    name: 'link listener bad bind',
    yaml: BASE.replace('bind: tls:0.0.0.0:10080', 'bind: 0.0.0.0:10080'),
    errors: [['link.listeners[0].bind', 14]],
  },
  {
    name: 'link dialer binding missing',
    yaml: BASE.replace(
      '  dialers:\n    - binding: transport\n  listeners',
      '  dialers:\n    - split: false\n  listeners',
    ),
    errors: [['link.dialers[0].binding', 11]],
  },
  {
    name: 'link dialer group names are strings',
    yaml: BASE.replace(
      '  dialers:\n    - binding: transport\n  listeners',
      '  dialers:\n    - binding: transport\n      groups: [1, ok]\n  listeners',
    ),
    errors: [['link.dialers[0].groups[0]', 12]],
  },
  {
    name: 'link dialer backoff bounds',
    yaml: BASE.replace(
      '  dialers:\n    - binding: transport\n  listeners',
      '  dialers:\n    - binding: transport\n      healthyDialBackoff:\n        minRetryInterval: 1ms\n        maxRetryInterval: 25h\n        retryBackoffFactor: 0.5\n  listeners',
    ),
    errors: [
      ['link.dialers[0].healthyDialBackoff.minRetryInterval', 13],
      ['link.dialers[0].healthyDialBackoff.maxRetryInterval', 14],
      ['link.dialers[0].healthyDialBackoff.retryBackoffFactor', 15],
    ],
  },
  {
    name: 'link dialer backoff min above the default max',
    yaml: BASE.replace(
      '  dialers:\n    - binding: transport\n  listeners',
      '  dialers:\n    - binding: transport\n      unhealthyDialBackoff:\n        minRetryInterval: 2h\n  listeners',
    ),
    errors: [['link.dialers[0].unhealthyDialBackoff.minRetryInterval', 13]],
  },
  {
    name: 'link dialer split must be a boolean',
    yaml: BASE.replace(
      '  dialers:\n    - binding: transport\n  listeners',
      '  dialers:\n    - binding: transport\n      split: maybe\n  listeners',
    ),
    errors: [['link.dialers[0].split', 12]],
  },
  {
    name: 'link dialer split as YAML 1.1 off',
    yaml: BASE.replace(
      '  dialers:\n    - binding: transport\n  listeners',
      '  dialers:\n    - binding: transport\n      split: off\n  listeners',
    ),
  },
  // listeners
  {
    name: 'edge listener without advertise',
    yaml: BASE.replace('    options:\n      advertise: router1.example.com:3022\n', ''),
    errors: [['listeners[0].options.advertise', 17]],
  },
  {
    name: 'edge listener with bind instead of address',
    yaml: BASE.replace('    address: tls:0.0.0.0:3022', '    bind: tls:0.0.0.0:3022'),
  },
  {
    name: 'edge listener without address',
    yaml: BASE.replace('    address: tls:0.0.0.0:3022\n', ''),
    errors: [['listeners[0].address', 17]],
  },
  {
    name: 'edge listener with a bad address',
    yaml: BASE.replace('address: tls:0.0.0.0:3022', 'address: tls:0.0.0.0:65536'),
    errors: [['listeners[0].address', 18]],
  },
  {
    name: 'a transport address takes port 0 (reference §1.6)',
    yaml: BASE.replace('address: tls:0.0.0.0:3022', 'address: tls:0.0.0.0:0'),
  },
  {
    name: 'edge listener advertise at top level',
    yaml: BASE.replace(
      '    options:\n      advertise: router1.example.com:3022\n',
      '    advertise: router1.example.com:3022\n',
    ),
  },
  {
    name: 'edge listener without the edge section',
    yaml: BASE.replace(/edge:\n {2}csr:\n {4}sans:\n {6}dns: \[router1.example.com\]\n/, ''),
    errors: [['listeners[0].binding', 17]],
    warnings: [
      ['edge', 1],
      ['edge.csr', 1],
    ],
  },
  {
    name: 'listener without binding',
    yaml: BASE.replace(
      '      advertise: router1.example.com:3022\n',
      '      advertise: router1.example.com:3022\n  - address: tls:0.0.0.0:1\n',
    ),
    errors: [
      ['listeners[1].binding', 21],
      ['listeners[1].options.advertise', 21],
    ],
  },
  {
    name: 'listener with an unknown binding',
    yaml: BASE.replace('  - binding: edge\n', '  - binding: edgy\n'),
    // With the edge section, no edge listener left is an error of its own.
    errors: [
      ['listeners', 17],
      ['listeners[0].binding', 17],
    ],
  },
  {
    name: 'tunnel listener in host mode needs no address',
    yaml: `${BASE}`.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: host\n  - binding: edge',
    ),
  },
  {
    name: 'tunnel listener in tproxy mode',
    yaml: BASE.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: tproxy\n      resolver: udp://127.0.0.1:53\n      dnsSvcIpRange: 100.64.0.1/10\n  - binding: edge',
    ),
  },
  {
    name: 'tunnel listener in proxy mode',
    yaml: BASE.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: proxy\n      services:\n        - web:8080\n        - dns:5353:udp\n  - binding: edge',
    ),
  },
  {
    name: 'tunnel listener with a bad mode',
    yaml: BASE.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: magic\n  - binding: edge',
    ),
    errors: [['listeners[0].options.mode', 19]],
  },
  {
    name: 'tunnel resolver outside tproxy is ignored with a warning',
    yaml: BASE.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: host\n      resolver: udp://127.0.0.1:53\n  - binding: edge',
    ),
    warnings: [['listeners[0].options.resolver', 20]],
  },
  {
    name: 'tunnel services outside proxy are ignored with a warning',
    yaml: BASE.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: tproxy\n      services: [web:80]\n  - binding: edge',
    ),
    warnings: [['listeners[0].options.services', 20]],
  },
  {
    name: 'tunnel bad range and service port; a bad resolver is a warning (a dummy one serves)',
    yaml: BASE.replace(
      'listeners:\n  - binding: edge',
      'listeners:\n  - binding: tunnel\n    options:\n      mode: tproxy\n      resolver: 127.0.0.1\n      dnsSvcIpRange: 100.64.0.1/40\n  - binding: tunnel\n    options:\n      mode: proxy\n      services: [web:99999]\n  - binding: edge',
    ),
    errors: [
      ['listeners[0].options.dnsSvcIpRange', 21],
      ['listeners[1].options.services[0]', 25],
    ],
    warnings: [['listeners[0].options.resolver', 20]],
  },
  // dialers
  {
    name: 'dialer with an unknown binding warns',
    yaml: BASE.replace('dialers:\n  - binding: transport\n', 'dialers:\n  - binding: udp\n'),
    warnings: [['dialers[0].binding', 22]],
  },
  {
    name: 'dialer without binding',
    yaml: BASE.replace('dialers:\n  - binding: transport\n', 'dialers:\n  - options: {}\n'),
    errors: [['dialers[0].binding', 22]],
  },
  // edge.csr
  {
    name: 'edge csr SANs',
    yaml: BASE.replace(
      '      dns: [router1.example.com]',
      '      dns: [router1.example.com]\n      ip: [127.0.0.1, not-an-ip]\n      uri: ["spiffe://x/y", "no uri"]',
    ),
    errors: [
      ['edge.csr.sans.ip[1]', 27],
      ['edge.csr.sans.uri[1]', 28],
    ],
  },
  {
    name: 'edge without csr warns',
    yaml: BASE.replace(
      '  csr:\n    sans:\n      dns: [router1.example.com]\n',
      '  heartbeatIntervalSeconds: 60\n',
    ),
    warnings: [['edge.csr', 24]],
  },
  {
    // Seed 001: "All csr fields are optional, but at least one valid SAN is needed to accept
    // connections": a warning, though the reference router stops at start without sans.
    name: 'edge csr without sans warns (optional by the specification)',
    yaml: BASE.replace('    sans:\n      dns: [router1.example.com]\n', '    country: US\n'),
    warnings: [['edge.csr.sans', 25]],
  },
  {
    name: 'edge csr with empty sans warns: no SAN to accept connections with',
    yaml: BASE.replace('      dns: [router1.example.com]\n', '      dns: []\n'),
    warnings: [['edge.csr.sans', 26]],
  },
  {
    name: 'a root csr stands in: an edge csr without sans is then never read',
    yaml: `${BASE.replace('    sans:\n      dns: [router1.example.com]\n', '    country: US\n')}csr:\n  sans:\n    dns: [r.example]\n`,
  },
  {
    name: 'edge intervals the reference router adjusts are warnings',
    yaml: BASE.replace(
      'edge:\n',
      'edge:\n  dbSaveIntervalSeconds: 5\n  heartbeatIntervalSeconds: 5\n',
    ),
    warnings: [
      ['edge.dbSaveIntervalSeconds', 24],
      ['edge.heartbeatIntervalSeconds', 25],
    ],
  },
  {
    name: 'root csr stands in for edge.csr',
    yaml: `${BASE.replace('  csr:\n    sans:\n      dns: [router1.example.com]\n', '  db: /tmp/db\n')}csr:\n  sans:\n    dns: [r.example]\n`,
  },
  // trace, profile, transport, web
  {
    name: 'trace without path',
    yaml: `${BASE}trace:\n  file: x\n`,
    errors: [['trace.path', L(2)]],
    warnings: [['trace.file', L(2)]],
  },
  {
    name: 'profile blocks need paths',
    yaml: `${BASE}profile:\n  cpu: {}\n  memory:\n    intervalMs: 0\n`,
    errors: [
      ['profile.cpu.path', L(2)],
      ['profile.memory.path', L(4)],
      ['profile.memory.intervalMs', L(4)],
    ],
  },
  {
    name: 'transport is an open map',
    yaml: `${BASE}transport:\n  westworld3:\n    profile_version: 1\n    anything: [1, 2]\n`,
  },
  {
    name: 'web health checks',
    yaml: `${BASE}web:\n  - name: health\n    bindPoints:\n      - interface: 127.0.0.1:8081\n        address: 127.0.0.1:8081\n    apis:\n      - binding: health-checks\n`,
  },
  {
    name: 'web with a wrong api and bad bind points',
    yaml: `${BASE}web:\n  - name: health\n    bindPoints:\n      - interface: 127.0.0.1\n        address: :8081\n    apis:\n      - binding: edge-management\n`,
    errors: [
      ['web[0].bindPoints[0].interface', L(4)],
      ['web[0].bindPoints[0].address', L(5)],
      ['web[0].apis[0].binding', L(7)],
    ],
  },
  {
    name: 'web entry missing everything',
    yaml: `${BASE}web:\n  - {}\n`,
    errors: [
      ['web[0].apis', L(2)],
      ['web[0].bindPoints', L(2)],
      ['web[0].name', L(2)],
    ],
  },
  // start rules
  {
    name: 'a minimal router warns once per missing section',
    yaml: 'v: 3\nidentity:\n  cert: c\n  key: k\nctrl:\n  endpoint: tls:c:1\n',
    warnings: [
      ['dialers', 1],
      ['edge', 1],
      ['edge.csr', 1],
      ['link', 1],
      ['listeners', 1],
    ],
  },
]

describe('router configuration checks', () => {
  it.each(cases)('$name', ({ yaml, errors = [], warnings = [], env }) => {
    const result = run(yaml, env)
    const sortPaths = (x: (string | number)[][]) =>
      [...x].sort(
        (a, b) => (a[1] as number) - (b[1] as number) || String(a[0]).localeCompare(String(b[0])),
      )
    expect(sortPaths(located(result.errors)), JSON.stringify(result.errors)).toEqual(
      sortPaths(errors),
    )
    expect(sortPaths(located(result.warnings)), JSON.stringify(result.warnings)).toEqual(
      sortPaths(warnings),
    )
    for (const p of [...result.errors, ...result.warnings]) {
      expect(p.message.length).toBeGreaterThan(10)
      expect(p.column).toBeGreaterThan(0)
      expect(p.message).not.toMatch(/internal error/)
    }
  })
})

describe('values the reference router adjusts or ignores', () => {
  it('the effective configuration holds what the router uses', () => {
    const { config, errors } = run(
      BASE.replace(
        '  endpoint: tls:ctrl.example.com:6262',
        '  endpoint: tls:a:1\n  endpoints: [tls:b:2]',
      )
        .replace('edge:\n', 'edge:\n  dbSaveIntervalSeconds: 5\n  heartbeatIntervalSeconds: 90\n')
        .concat('metrics:\n  messageQueueSize: 0\n'),
    )
    expect(errors).toEqual([])
    expect(config?.ctrl.endpoint).toBe('tls:a:1')
    expect(config?.ctrl.endpoints).toBeUndefined()
    expect(config?.edge?.dbSaveIntervalSeconds).toBe(30)
    expect(config?.edge?.heartbeatIntervalSeconds).toBe(60)
    expect(config?.metrics.messageQueueSize).toBe(0)
  })

  it('in range, the intervals are kept as written', () => {
    const { config, warnings } = run(
      BASE.replace(
        'edge:\n',
        'edge:\n  dbSaveIntervalSeconds: 45\n  heartbeatIntervalSeconds: 10\n',
      ),
    )
    expect(warnings).toEqual([])
    expect(config?.edge?.dbSaveIntervalSeconds).toBe(45)
    expect(config?.edge?.heartbeatIntervalSeconds).toBe(10)
  })

  it('a negative metrics queue size is still an error', () => {
    const { errors } = run(`${BASE}metrics:\n  messageQueueSize: -1\n`)
    expect(errors.map((e) => e.path)).toEqual(['metrics.messageQueueSize'])
  })
})

describe('values from the environment in messages', () => {
  it('shows a long substituted value by its variable, never the value itself', () => {
    const secret = 'AKIAsecret/value+42'
    const { errors } = run(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference, not a template
      BASE.replace('tls:ctrl.example.com:6262', '${AWS_SECRET_ACCESS_KEY}'),
      { AWS_SECRET_ACCESS_KEY: secret },
    )
    expect(errors.map((e) => e.path)).toEqual(['ctrl.endpoint'])
    const text = JSON.stringify(errors)
    expect(text).not.toContain(secret)
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as the message shows it
    expect(errors[0]?.message).toContain('${AWS_SECRET_ACCESS_KEY}')
    // $NAME without braces too; a short value (a port) is shown as it is.
    const plain = run(BASE.replace('tls:ctrl.example.com:6262', 'tls:$HOST:$PORT'), {
      HOST: 'token-abcdefgh',
      PORT: '99999',
    })
    expect(plain.errors.map((e) => e.path)).toEqual(['ctrl.endpoint'])
    expect(JSON.stringify(plain.errors)).not.toContain('token-abcdefgh')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as the message shows it
    expect(plain.errors[0]?.message).toContain('tls:${HOST}:99999')
    // A name only braces allow, and a value with quotes and backslashes (JSON-escaped in messages).
    const odd = 'quote"and\\backslash-secret'
    const braced = run(`${BASE}forwarder:\n  faultTxInterval: \${MY-KEY}\n`, { 'MY-KEY': odd })
    expect(braced.errors.map((e) => e.path)).toEqual(['forwarder.faultTxInterval'])
    expect(JSON.stringify(braced.errors)).not.toContain('backslash-secret')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as the message shows it
    expect(braced.errors[0]?.message).toContain('${MY-KEY}')
  })

  it('shows a long substituted value by its variable in the printed configuration too', () => {
    const secret = 'AKIAVERYSECRETVALUE123'
    const env = { SECRET_TOKEN: secret, HOST: 'ctrl.example.com' }
    // An ignored key of a section that keeps unknown keys, and a known value.
    const yaml = BASE.replace('tls:ctrl.example.com:6262', 'tls:$HOST:6262').concat(
      'edge:\n  foo: $SECRET_TOKEN\n',
    )
    const result = run(yaml, env)
    expect(JSON.stringify(result.config)).toContain(secret) // the configuration itself is as read
    const printed = JSON.stringify(result.printable)
    expect(printed).not.toContain(secret)
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as it is printed
    expect(printed).toContain('${SECRET_TOKEN}')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as it is printed
    expect(result.printable?.ctrl).toEqual({ ...result.config?.ctrl, endpoint: 'tls:${HOST}:6262' })
  })
})
