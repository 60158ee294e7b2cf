import { describe, expect, it } from 'vitest'
import { checkRouterConfig } from '../../src/router-config/index.js'

/** The required sections only; each case appends a snippet whose last line holds the field. */
const BASE = `v: 3
identity:
  cert: /etc/ziti/client.cert
  server_cert: /etc/ziti/server.cert
  key: /etc/ziti/router.key
  ca: /etc/ziti/ca.cert
ctrl:
  endpoint: tls:ctrl.example.com:6262
`

/** With edge, the router needs an edge listener (placed before the snippet, whose last line is VALUE's). */
const EDGE_LISTENER = `listeners:
  - binding: edge
    address: tls:0.0.0.0:3022
    options: {advertise: "router1.example.com:3022"}
`

/** Every integer field of the specification: its path, a snippet placing VALUE, a valid value. */
const FIELDS: [path: string, snippet: string, good: number][] = [
  ...(
    [
      ['faultTxInterval', 15000],
      ['idleCircuitTimeout', 60000],
      ['idleTxInterval', 60000],
      ['linkDialQueueLength', 1000],
      ['linkDialWorkerCount', 32],
      ['rateLimitedQueueLength', 5000],
      ['rateLimitedWorkerCount', 5],
      ['xgressCloseCheckInterval', 5000],
      ['xgressDialDwellTime', 0],
      ['xgressDialQueueLength', 1000],
      ['xgressDialWorkerCount', 128],
      ['latencyProbeInterval', 10000],
    ] as const
  ).map(([key, good]): [string, string, number] => [
    `forwarder.${key}`,
    `forwarder:\n  ${key}: VALUE\n`,
    good,
  ]),
  ['healthChecks.linkCheck.minLinks', 'healthChecks:\n  linkCheck:\n    minLinks: VALUE\n', 1],
  ['metrics.messageQueueSize', 'metrics:\n  messageQueueSize: VALUE\n', 10],
  ['metrics.eventQueueSize', 'metrics:\n  eventQueueSize: VALUE\n', 10],
  [
    'profile.memory.intervalMs',
    'profile:\n  memory:\n    path: /tmp/m\n    intervalMs: VALUE\n',
    15000,
  ],
  ['edge.dbSaveIntervalSeconds', `${EDGE_LISTENER}edge:\n  dbSaveIntervalSeconds: VALUE\n`, 30],
  [
    'edge.heartbeatIntervalSeconds',
    `${EDGE_LISTENER}edge:\n  heartbeatIntervalSeconds: VALUE\n`,
    60,
  ],
  [
    'edge.sessionValidateChunkSize',
    `${EDGE_LISTENER}edge:\n  sessionValidateChunkSize: VALUE\n`,
    1000,
  ],
  ['link.payloadSenderQueueSize', 'link:\n  payloadSenderQueueSize: VALUE\n', 100],
  ['link.ackSenderQueueSize', 'link:\n  ackSenderQueueSize: VALUE\n', 100],
  [
    'link.dialers[0].maxDefaultConnections',
    'link:\n  dialers:\n    - binding: transport\n      maxDefaultConnections: VALUE\n',
    3,
  ],
  [
    'link.dialers[0].maxAckConnections',
    'link:\n  dialers:\n    - binding: transport\n      maxAckConnections: VALUE\n',
    1,
  ],
  [
    'dialers[0].options.mtu',
    'dialers:\n  - binding: transport\n    options:\n      mtu: VALUE\n',
    1400,
  ],
]

/** YAML floats, each equal to an integer: `3.0`, `3.`, `3e0`, `3.0e+0`, `!!float 3`. */
const floats = (n: number) => [`${n}.0`, `${n}.`, `${n}e0`, `${n}.0e+0`, `!!float ${n}`]

const lines = (yaml: string) => yaml.split('\n').length - 1
const check = (yaml: string) => checkRouterConfig(yaml, {})
const errorsAt = (yaml: string) => check(yaml).errors.map((e) => [e.path, e.line])

describe('integer fields of the router configuration', () => {
  it.each(floats(3))('v: %s is an error at v, line 1', (value) => {
    const { errors } = check(BASE.replace('v: 3', `v: ${value}`))
    expect(errors.map((e) => [e.path, e.line])).toEqual([['v', 1]])
    expect(errors[0]?.message).toContain('float')
  })

  it.each(['3', '03', '0x3', '+3', '0o3', '0o0_3'])('v: %s is the integer 3', (value) => {
    expect(errorsAt(BASE.replace('v: 3', `v: ${value}`))).toEqual([])
  })

  it('reads base 60 as yaml.v2 does, a string: v: 0:3 is no version, 1:30 no duration or count', () => {
    expect(errorsAt(BASE.replace('v: 3', 'v: 0:3'))).toEqual([['v', 1]])
    const yaml = `${BASE}forwarder:\n  xgressDialDwellTime: 1:30\n`
    expect(errorsAt(yaml)).toEqual([['forwarder.xgressDialDwellTime', lines(yaml)]])
    // Quoted, or in a string field, the text is kept as written.
    const csr = `${BASE}edge:\n  csr:\n    organization: 1:30\n`
    expect(check(csr).config?.edge?.csr?.organization).toBe('1:30')
  })

  const cases = FIELDS.flatMap(([path, snippet, good]) =>
    floats(good).map((value) => ({ path, snippet, value })),
  )
  it.each(cases)('$path: $value is an error at its line', ({ path, snippet, value }) => {
    const yaml = BASE + snippet.replace('VALUE', value)
    const result = check(yaml)
    expect(result.errors.map((e) => [e.path, e.line])).toEqual([[path, lines(yaml)]])
    expect(result.errors[0]?.message).toContain('float')
  })

  it.each(FIELDS)('%s: an integer is accepted', (_path, snippet, good) => {
    expect(errorsAt(BASE + snippet.replace('VALUE', String(good)))).toEqual([])
  })

  it('reports a float in place of an integer with the default in the effective configuration', () => {
    const { config } = check(`${BASE}forwarder:\n  linkDialWorkerCount: 40.0\n`)
    expect(config?.forwarder.linkDialWorkerCount).toBe(32)
  })

  it('still takes floats where the specification says number', () => {
    const yaml = `${BASE}link:\n  dialers:\n    - binding: transport\n      healthyDialBackoff:\n        retryBackoffFactor: 1.5\n`
    expect(errorsAt(yaml)).toEqual([])
    expect(check(yaml).config?.link?.dialers[0]?.healthyDialBackoff.retryBackoffFactor).toBe(1.5)
  })
})
