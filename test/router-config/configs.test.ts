import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { run } from '../../src/router-config/cli.js'
import { checkRouterConfig } from '../../src/router-config/index.js'
import { INIT_TEMPLATE } from '../../src/router-config/init-template.js'
import { makeServerCert } from '../helpers/certs.js'

const dir = mkdtempSync(join(tmpdir(), 'router-config-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

const FABRIC = `v: 3
identity:
  cert: /etc/ziti/client.cert
  key: /etc/ziti/router.key
  ca: /etc/ziti/ca.cert
csr:
  sans:
    dns: [transit.example.com]
ctrl:
  endpoints:
    - tls:ctrl1.example.com:6262
    - tls:ctrl2.example.com:6262
link:
  listeners:
    - binding: transport
      bind: tls:[::]:10080
      advertise: tls:transit.example.com:10080
      groups: [public, dmz]
  dialers:
    - binding: transport
      groups: public
      split: no
dialers:
  - binding: transport
`

const TUNNELER = (mode: string, extra: string) => `v: 3
identity: {cert: c.pem, key: k.pem}
ctrl: {endpoint: "tls:ctrl.example.com:6262"}
edge:
  csr:
    sans: {dns: [tunneler.local], ip: [10.0.0.5]}
listeners:
  - binding: tunnel
    options:
      mode: ${mode}
${extra}
  - binding: edge
    address: tls:0.0.0.0:3022
    options: {advertise: "tunneler.local:3022"}
dialers:
  - binding: transport
link:
  dialers:
    - binding: transport
`

describe('realistic configurations', () => {
  it('accepts the standard edge router of init with no warnings, and fills every default', () => {
    const r = checkRouterConfig(INIT_TEMPLATE, {})
    expect(r.errors).toEqual([])
    expect(r.warnings).toEqual([])
    expect(r.config?.web?.[0]?.apis).toEqual([{ binding: 'health-checks' }])
  })

  it('fills the seed defaults of everything a minimal file leaves out', () => {
    const r = checkRouterConfig(
      'v: 3\nidentity: {cert: c, key: k}\nctrl: {endpoint: "tls:c:1"}\nprofile:\n  memory:\n    path: /tmp/mem\nlink:\n  dialers:\n    - binding: transport\n',
      {},
    )
    expect(r.errors).toEqual([])
    expect(r.config).toMatchObject({
      ctrl: { defaultRequestTimeout: '5s' },
      forwarder: {
        faultTxInterval: 15000,
        idleCircuitTimeout: 60000,
        idleTxInterval: 60000,
        linkDialQueueLength: 1000,
        linkDialWorkerCount: 32,
        rateLimitedQueueLength: 5000,
        rateLimitedWorkerCount: 5,
        xgressCloseCheckInterval: 5000,
        xgressDialDwellTime: 0,
        xgressDialQueueLength: 1000,
        xgressDialWorkerCount: 128,
      },
      healthChecks: {
        ctrlPingCheck: { interval: '30s', timeout: '15s', initialDelay: '15s' },
        linkCheck: { interval: '5s', initialDelay: '1s', minLinks: 0 },
      },
      metrics: { reportInterval: '1m', messageQueueSize: 10, intervalAgeThreshold: '1m20s' },
      profile: { memory: { path: '/tmp/mem', intervalMs: 15000 } },
      link: {
        dialers: [
          {
            split: true,
            groups: ['default'],
            healthyDialBackoff: {
              minRetryInterval: '5s',
              maxRetryInterval: '5m',
              retryBackoffFactor: 1.5,
            },
            unhealthyDialBackoff: {
              minRetryInterval: '1m',
              maxRetryInterval: '1h',
              retryBackoffFactor: 10,
            },
          },
        ],
      },
    })
  })

  it('accepts a fabric-only router, warning only about the edge it does not have', () => {
    const r = checkRouterConfig(FABRIC, {})
    expect(r.errors).toEqual([])
    expect(r.warnings.map((w) => w.path)).toEqual(['edge', 'listeners'])
    expect(r.config?.link?.listeners[0]?.groups).toEqual(['public', 'dmz'])
    expect(r.config?.link?.dialers[0]).toMatchObject({ groups: ['public'], split: false })
  })

  it.each([
    ['host', ''],
    [
      'tproxy',
      '      resolver: udp://127.0.0.1:53\n      dnsSvcIpRange: 100.64.0.1/10\n      lanIf: eth0',
    ],
    ['proxy', '      services:\n        - ssh:2222\n        - dns:5353:udp'],
  ])('accepts a tunneler in %s mode', (mode, extra) => {
    const r = checkRouterConfig(TUNNELER(mode, extra), {})
    expect(r.errors).toEqual([])
    expect(r.warnings).toEqual([])
    expect(r.config?.listeners?.[0]?.options?.mode).toBe(mode)
  })

  it('defaults a tunnel listener to tproxy mode, the router code default (reference §4)', () => {
    const r = checkRouterConfig(
      TUNNELER('host', '').replace('      mode: host\n', '      lanIf: eth0\n'),
      {},
    )
    expect(r.errors).toEqual([])
    expect(r.warnings).toEqual([])
    expect(r.config?.listeners?.[0]?.options?.mode).toBe('tproxy')
  })

  it('reports every problem of a broken file in one pass, in file order', () => {
    const r = checkRouterConfig(
      'v: "3"\nctrl:\n  endpoint: nowhere\nforwarder:\n  linkDialQueueLength: 0\n  xgressDialQueueLength: 20000\nhealthChecks:\n  linkCheck:\n    interval: 5\n',
      {},
    )
    expect(r.errors.map((e) => [e.path, e.line])).toEqual([
      ['identity', 1],
      ['v', 1],
      ['ctrl.endpoint', 3],
      ['forwarder.linkDialQueueLength', 5],
      ['forwarder.xgressDialQueueLength', 6],
      ['healthChecks.linkCheck.interval', 9],
    ])
  })
})

describe('router-config command', () => {
  const exec = (...args: string[]) => {
    let out = ''
    let err = ''
    const status = run(
      args,
      {},
      (s) => {
        out += s
      },
      (s) => {
        err += s
      },
    )
    return { status, out, err }
  }

  it('check prints FILE:LINE:COL: kind: PATH: MESSAGE and exits 1 on errors', () => {
    const path = file('bad.yml', 'v: 2\nidentity: {cert: c, key: k}\nctrl: {endpoint: "tls:c:1"}\n')
    const { status, out } = exec('check', path)
    expect(status).toBe(1)
    expect(out).toMatch(new RegExp(`^${path}:1:4: error: v: version 2 is not supported`, 'm'))
    expect(out).toMatch(new RegExp(`^${path}:1:1: warning: dialers: `, 'm'))
  })

  it('exits 0 with warnings only, and 1 with --strict', () => {
    const path = file(
      'warn.yml',
      'v: 3\nidentity: {cert: c, key: k}\nctrl: {endpoint: "tls:c:1"}\n',
    )
    expect(exec('check', path).status).toBe(0)
    const strict = exec('check', path, '--strict')
    expect(strict.status).toBe(1)
    expect(strict.out).toContain(': error: dialers:')
  })

  it('exits 2 when the file cannot be read, and on bad usage', () => {
    expect(exec('check', join(dir, 'missing.yml')).status).toBe(2)
    expect(exec('check').status).toBe(2)
    expect(exec('check', 'x', '--bogus').status).toBe(2)
  })

  it.each([
    [['check', 'x.yml', '--bogus'], '--bogus'],
    [['check', 'x.yml', '-x'], '-x'],
    [['check', 'x.yml', '--strict=yes'], '--strict'],
    [['init', '--json'], 'init'],
    [['init', 'extra.yml'], 'init'],
    [['check', 'a.yml', 'b.yml'], 'one file'],
    [['verify', 'x.yml'], 'verify'],
    [[], 'command'],
  ])(
    '%j is bad usage: exit 2, the reason and the usage on stderr, nothing on stdout',
    (args, named) => {
      const { status, out, err } = exec(...args)
      expect(status).toBe(2)
      expect(out).toBe('')
      expect(err.split('\n')[0]).toContain(named)
      expect(err).toContain('usage:')
    },
  )

  it('--help and -h print the usage and exit 0', () => {
    for (const flag of ['--help', '-h']) {
      const { status, out } = exec(flag)
      expect(status).toBe(0)
      expect(out).toMatch(/^usage:/)
    }
  })

  it('takes options before or after the command and the file, and -- ends the options', () => {
    const path = file(
      'order.yml',
      'v: 3\nidentity: {cert: c, key: k}\nctrl: {endpoint: "tls:c:1"}\n',
    )
    expect(exec('check', '--strict', path).status).toBe(1)
    const named = exec('--json', 'check', '--', path)
    expect(named.status).toBe(0)
    expect(JSON.parse(named.out).valid).toBe(true)
  })

  it('--json gives valid, errors and warnings with path, line, column and message', () => {
    const path = file(
      'j.yml',
      'v: 3\nidentity: {cert: c, key: k}\nctrl: {endpoint: "tls:c:1"}\nforwarder: {linkDialQueueLength: 0}\n',
    )
    const { status, out } = exec('check', path, '--json')
    expect(status).toBe(1)
    const body = JSON.parse(out)
    expect(body.valid).toBe(false)
    expect(body.errors).toEqual([
      { path: 'forwarder.linkDialQueueLength', line: 4, column: 34, message: expect.any(String) },
    ])
    expect(body.warnings.length).toBe(5)
  })

  it('--print shows the effective configuration with defaults, as YAML or JSON', () => {
    const path = file('p.yml', INIT_TEMPLATE.replace(/forwarder:\n( {2}.*\n)+/, ''))
    const yamlOut = exec('check', path, '--print')
    expect(yamlOut.status).toBe(0)
    expect(parse(yamlOut.out).forwarder.xgressDialWorkerCount).toBe(128)
    const jsonOut = JSON.parse(exec('check', path, '--print', '--json').out)
    expect(jsonOut.config.forwarder.rateLimitedWorkerCount).toBe(5)
  })

  it('--check-files verifies identity files exist and hold PEM', async () => {
    const cert = file('c.pem', (await makeServerCert()).certPem)
    const notPem = file('k.pem', 'not a key')
    const path = file(
      'f.yml',
      `v: 3\nidentity:\n  cert: ${cert}\n  key: ${notPem}\n  ca: ${join(dir, 'absent.pem')}\nctrl: {endpoint: "tls:c:1"}\n`,
    )
    expect(exec('check', path).status).toBe(0)
    const checked = exec('check', path, '--check-files')
    expect(checked.status).toBe(1)
    expect(checked.out).toContain(':4:8: error: identity.key: file')
    expect(checked.out).toContain(':5:7: error: identity.ca: file')
    expect(checked.out).not.toContain('identity.cert')
  })

  it('runs as npm run -s router-config, and init writes a file that checks clean', () => {
    const root = new URL('../../', import.meta.url).pathname
    // As the README says to run it, from another folder than the package's: npm's banner stays out
    // of stdout (-s), and the relative FILE is read where the command was typed.
    const npm = (...args: string[]) =>
      spawnSync('npm', ['run', '-s', '--prefix', root, 'router-config', '--', ...args], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, npm_lifecycle_event: undefined, INIT_CWD: undefined },
      })
    const init = npm('init')
    expect(init.status, init.stderr).toBe(0)
    expect(init.stdout).toBe(INIT_TEMPLATE)
    file('init.yml', init.stdout)
    const checked = npm('check', 'init.yml', '--strict', '--json')
    expect(checked.status, checked.stderr).toBe(0)
    expect(JSON.parse(checked.stdout)).toEqual({ valid: true, errors: [], warnings: [] })
    const absent = npm('check', 'absent.yml')
    expect(absent.status).toBe(2)
    expect(absent.stderr).toContain('absent.yml: cannot read the file: ENOENT')
  })
})
