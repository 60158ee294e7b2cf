import { isIP } from 'node:net'
import { formatDuration } from '../../duration.js'
import { type Checker, join, type MapNode } from '../checker.js'
import { plainMap } from '../plain.js'
import type {
  EdgeConfig,
  ForwarderConfig,
  HealthChecksConfig,
  MetricsConfig,
  ProfileConfig,
  WebConfig,
} from '../types.js'
import { hostPortProblem } from '../values.js'
import { checkIdentity } from './core.js'

const d = formatDuration

/** edge: the csr used at enrollment, and edge tuning the reference router reads. */
/** `csrInUse`: edge.csr is the csr the router starts with (no root csr stands in for it). */
export function checkEdge(c: Checker, map: MapNode, csrInUse = true): EdgeConfig {
  const path = 'edge'
  c.known(map, path, [
    'csr',
    'db',
    'dbSaveIntervalSeconds',
    'heartbeatIntervalSeconds',
    'sessionValidateChunkSize',
    'sessionValidateMinInterval',
    'sessionValidateMaxInterval',
    'apiProxy',
  ])
  // The reference router raises a lower save interval to 30 and puts a heartbeat interval outside
  // 10 to 60 back to 60, with a warning at most: so does this check, and --print shows what it uses.
  const dbSave = c.int(map, path, 'dbSaveIntervalSeconds', {
    def: 30,
    min: 30,
    outOfRange: 'clamp',
  })
  const heartbeat = c.int(map, path, 'heartbeatIntervalSeconds', {
    def: 60,
    min: 10,
    max: 60,
    outOfRange: 'default',
  })
  c.int(map, path, 'sessionValidateChunkSize', { min: 1 })
  const db = c.str(map, path, 'db')
  if (db === '') {
    c.warn(
      join(path, 'db'),
      (map.entries.get('db')?.value ?? map).pos,
      'db is empty: the router uses its default, the configuration file path + .proto.gzip',
    )
  }
  const apiProxy = c.map(map, path, 'apiProxy')
  if (apiProxy) {
    const ap = join(path, 'apiProxy')
    c.known(apiProxy, ap, ['listener', 'upstream'])
    for (const key of ['listener', 'upstream']) {
      const value = c.str(apiProxy, ap, key)
      if (value === undefined ? !c.has(apiProxy, key) : value === '')
        c.error(
          join(ap, key),
          (apiProxy.entries.get(key)?.value ?? apiProxy).pos,
          `${key} is required in apiProxy, a non-empty string (host:port)`,
        )
    }
  }
  for (const key of ['sessionValidateMinInterval', 'sessionValidateMaxInterval']) {
    if (c.has(map, key)) c.durationMs(map, path, key, { def: 0 })
  }
  const out: EdgeConfig = { ...plainMap(map) }
  if (c.has(map, 'dbSaveIntervalSeconds')) out.dbSaveIntervalSeconds = dbSave
  if (c.has(map, 'heartbeatIntervalSeconds')) out.heartbeatIntervalSeconds = heartbeat
  delete out.csr
  const csr = c.map(map, path, 'csr')
  if (csr) out.csr = checkCsr(c, csr, join(path, 'csr'), csrInUse)
  return out
}

/** `inUse`: the router starts with this csr, so what it needs at start is checked too. */
export function checkCsr(
  c: Checker,
  csr: MapNode,
  path: string,
  inUse: boolean,
): NonNullable<EdgeConfig['csr']> {
  const fields = ['country', 'province', 'locality', 'organization', 'organizationalUnit'] as const
  c.known(csr, path, [...fields, 'sans'])
  const out: NonNullable<EdgeConfig['csr']> = { sans: { dns: [], ip: [], uri: [], email: [] } }
  for (const f of fields) {
    const v = c.str(csr, path, f)
    if (v !== undefined) out[f] = v
  }
  const sans = c.map(csr, path, 'sans')
  const sp = join(path, 'sans')
  if (inUse && !c.has(csr, 'sans')) {
    // Optional by the specification ("all csr fields are optional"), which wins; yet without a SAN
    // no SDK or router accepts the certificate, and the reference router dereferences it at start
    // (`sans: {}` is enough for that).
    c.warn(
      sp,
      csr.pos,
      'no sans: the certificate will not be accepted by SDKs or other routers (add sans with a dns or ip name); the reference router also stops at start without sans',
    )
  }
  c.known(sans, sp, ['dns', 'ip', 'uri', 'email'])
  for (const kind of ['dns', 'ip', 'uri', 'email'] as const) {
    const list =
      c.strList(sans, sp, kind, (v, p, pos) => {
        if (kind === 'ip' && isIP(v) === 0) c.error(p, pos, `"${v}" is not an IP address`)
        if (kind === 'uri' && !/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(v))
          c.error(p, pos, `"${v}" is not a URI (such as spiffe://example.org/router)`)
        if (kind === 'email' && !/^[^@\s]+@[^@\s]+$/.test(v))
          c.error(p, pos, `"${v}" is not an email address`)
        if (
          kind === 'dns' &&
          !/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(
            v,
          )
        ) {
          c.error(p, pos, `"${v}" is not a DNS name`)
        }
      }) ?? []
    out.sans[kind] = list
  }
  if (inUse && sans && Object.values(out.sans).every((l) => l.length === 0)) {
    c.warn(
      sp,
      sans.pos,
      'no SAN: the certificate will not be accepted by SDKs or other routers (add a dns or ip name)',
    )
  }
  return out
}

/** forwarder: integer settings with the seed's defaults and bounds (times in milliseconds). */
export function checkForwarder(c: Checker, map: MapNode | undefined): ForwarderConfig {
  const path = 'forwarder'
  const ms = 'milliseconds'
  // The router takes a negative time as written (reference §2.4); the seed states no bound.
  const keep = 'keep' as const
  const rules = {
    faultTxInterval: { def: 15000, min: 0, what: `${ms}, 0 disables`, outOfRange: keep },
    idleCircuitTimeout: { def: 60000, min: 0, what: ms, outOfRange: keep },
    idleTxInterval: { def: 60000, min: 0, what: `${ms}, 0 disables`, outOfRange: keep },
    linkDialQueueLength: { def: 1000, min: 1, max: 10000 },
    linkDialWorkerCount: { def: 32, min: 1, max: 10000 },
    rateLimitedQueueLength: { def: 5000, min: 1, max: 50000 },
    rateLimitedWorkerCount: { def: 5, min: 1, max: 10000 },
    xgressCloseCheckInterval: { def: 5000, min: 0, what: ms, outOfRange: keep },
    xgressDialDwellTime: { def: 0, min: 0, what: ms, outOfRange: keep },
    xgressDialQueueLength: { def: 1000, min: 1, max: 10000 },
    xgressDialWorkerCount: { def: 128, min: 1, max: 10000 },
  }
  c.known(map, path, [...Object.keys(rules), 'latencyProbeInterval', 'unresponsiveLinkTimeout'])
  const out = Object.fromEntries(
    Object.entries(rules).map(([key, rule]) => [key, c.int(map, path, key, rule)]),
  ) as unknown as ForwarderConfig // every key of rules is a ForwarderConfig number
  const probe = c.int(map, path, 'latencyProbeInterval', { min: 0, what: ms })
  if (probe !== undefined) out.latencyProbeInterval = probe
  // A duration string or an integer of milliseconds (reference §2.4), at least 5s either way.
  const timeout = c.entry(map, 'unresponsiveLinkTimeout')
  if (
    timeout?.kind === 'scalar' &&
    typeof timeout.value === 'number' &&
    timeout.float === undefined
  )
    c.int(map, path, 'unresponsiveLinkTimeout', { min: 5000, what: 'milliseconds, or a duration' })
  else if (timeout !== undefined)
    c.durationMs(map, path, 'unresponsiveLinkTimeout', { def: 60_000, min: 5000 })
  return out
}

export function checkHealthChecks(c: Checker, map: MapNode | undefined): HealthChecksConfig {
  const path = 'healthChecks'
  c.known(map, path, ['ctrlPingCheck', 'linkCheck'])
  const ping = c.map(map, path, 'ctrlPingCheck')
  const pp = join(path, 'ctrlPingCheck')
  c.known(ping, pp, ['interval', 'timeout', 'initialDelay'])
  const link = c.map(map, path, 'linkCheck')
  const lp = join(path, 'linkCheck')
  c.known(link, lp, ['interval', 'initialDelay', 'minLinks'])
  return {
    ctrlPingCheck: {
      interval: d(c.durationMs(ping, pp, 'interval', { def: 30_000 })),
      timeout: d(c.durationMs(ping, pp, 'timeout', { def: 15_000 })),
      initialDelay: d(c.durationMs(ping, pp, 'initialDelay', { def: 15_000, min: 0 })),
    },
    linkCheck: {
      interval: d(c.durationMs(link, lp, 'interval', { def: 5_000 })),
      initialDelay: d(c.durationMs(link, lp, 'initialDelay', { def: 1_000, min: 0 })),
      minLinks: c.int(link, lp, 'minLinks', { def: 0, min: 0 }),
    },
  }
}

export function checkMetrics(c: Checker, map: MapNode | undefined): MetricsConfig {
  const path = 'metrics'
  c.known(map, path, [
    'reportInterval',
    'messageQueueSize',
    'intervalAgeThreshold',
    'eventQueueSize',
    'enableDataDelayMetric',
  ])
  c.int(map, path, 'eventQueueSize', { min: 1 })
  return {
    reportInterval: d(c.durationMs(map, path, 'reportInterval', { def: 60_000 })),
    messageQueueSize: c.int(map, path, 'messageQueueSize', { def: 10, min: 0 }),
    intervalAgeThreshold: d(c.durationMs(map, path, 'intervalAgeThreshold', { def: 80_000 })),
  }
}

function requiredPath(c: Checker, map: MapNode, path: string): string {
  const value = c.str(map, path, 'path')
  if (!c.has(map, 'path') || value === '')
    c.error(
      join(path, 'path'),
      c.has(map, 'path') ? (map.entries.get('path')?.value ?? map).pos : map.pos,
      `path is required when ${path} is set: the file to write to${value === undefined ? '' : ' (it is empty)'}`,
    )
  return value ?? ''
}

export function checkTrace(c: Checker, map: MapNode): { path: string } {
  c.known(map, 'trace', ['path'])
  return { path: requiredPath(c, map, 'trace') }
}

export function checkProfile(c: Checker, map: MapNode | undefined): ProfileConfig {
  c.known(map, 'profile', ['cpu', 'memory'])
  const out: ProfileConfig = {}
  const cpu = c.map(map, 'profile', 'cpu')
  if (cpu) {
    c.known(cpu, 'profile.cpu', ['path'])
    out.cpu = { path: requiredPath(c, cpu, 'profile.cpu') }
  }
  const memory = c.map(map, 'profile', 'memory')
  if (memory) {
    c.known(memory, 'profile.memory', ['path', 'intervalMs'])
    out.memory = {
      path: requiredPath(c, memory, 'profile.memory'),
      intervalMs: c.int(memory, 'profile.memory', 'intervalMs', {
        def: 15000,
        min: 1,
        what: 'milliseconds',
      }),
    }
  }
  return out
}

const TLS = ['TLS1.0', 'TLS1.1', 'TLS1.2', 'TLS1.3']

/** web: servers exposing the health-checks API. */
export function checkWeb(c: Checker, root: MapNode, checkFiles: boolean): WebConfig[] | undefined {
  const items = c.list(root, '', 'web')
  if (!items) return undefined
  return items.flatMap((node, i) => {
    const p = join('web', i)
    const w = c.asMap(node, p)
    if (!w) return []
    c.known(w, p, ['name', 'bindPoints', 'apis', 'identity', 'options'])
    const name = c.str(w, p, 'name')
    if (!c.has(w, 'name') || name === '')
      c.error(join(p, 'name'), w.pos, 'name is required: a name for this web server')
    const bindPoints: WebConfig['bindPoints'] = []
    const bps = c.list(w, p, 'bindPoints')
    if (!bps || bps.length === 0)
      c.error(
        join(p, 'bindPoints'),
        w.pos,
        'bindPoints needs at least one entry with interface and address (host:port)',
      )
    bps?.forEach((bpNode, k) => {
      const bp = c.asMap(bpNode, join(join(p, 'bindPoints'), k))
      if (!bp) return
      const bpp = join(join(p, 'bindPoints'), k)
      c.known(bp, bpp, ['interface', 'address', 'newAddress'])
      const values: Record<string, string> = {}
      for (const key of ['interface', 'address', 'newAddress']) {
        const v = c.str(bp, bpp, key)
        if (v === undefined) {
          if (key !== 'newAddress' && !c.has(bp, key))
            c.error(join(bpp, key), bp.pos, `${key} is required (host:port)`)
          continue
        }
        const problem = hostPortProblem(v, true)
        if (problem)
          c.error(
            join(bpp, key),
            (bp.entries.get(key)?.value ?? bp).pos,
            `"${v}" is not host:port: ${problem}`,
          )
        values[key] = v
      }
      // A missing interface or address is an error above; the config then only reports problems.
      bindPoints.push(values as WebConfig['bindPoints'][number])
    })
    const apis: WebConfig['apis'] = []
    const apiNodes = c.list(w, p, 'apis')
    if (!apiNodes || apiNodes.length === 0)
      c.error(join(p, 'apis'), w.pos, 'apis needs at least one entry: binding: health-checks')
    apiNodes?.forEach((apiNode, j) => {
      const ap = join(join(p, 'apis'), j)
      const api = c.asMap(apiNode, ap)
      if (!api) return
      c.known(api, ap, ['binding', 'options'])
      const binding = c.str(api, ap, 'binding')
      if (binding !== 'health-checks') {
        c.error(
          join(ap, 'binding'),
          (api.entries.get('binding')?.value ?? api).pos,
          `binding ${binding === undefined ? 'is required' : `"${binding}" is not offered`}: a router serves only health-checks`,
        )
      }
      const apiOptions = c.map(api, ap, 'options')
      // Seed 001: "The API has no options at present".
      for (const [key, { keyPos }] of apiOptions?.entries ?? []) {
        c.warn(
          join(join(ap, 'options'), key),
          keyPos,
          `the health-checks API has no options: "${key}" is ignored`,
        )
      }
      apis.push({ binding: 'health-checks' })
    })
    const out: WebConfig = { name: name ?? '', bindPoints, apis }
    const identity = c.map(w, p, 'identity')
    if (identity) out.identity = checkIdentity(c, identity, join(p, 'identity'), checkFiles, 'web')
    const options = c.map(w, p, 'options')
    if (options) {
      const op = join(p, 'options')
      c.known(options, op, [
        'readTimeout',
        'idleTimeout',
        'writeTimeout',
        'minTLSVersion',
        'maxTLSVersion',
      ])
      for (const key of ['readTimeout', 'idleTimeout', 'writeTimeout'])
        c.durationMs(options, op, key, { def: 5000 })
      const versions = { minTLSVersion: 'TLS1.2', maxTLSVersion: 'TLS1.3' }
      for (const key of ['minTLSVersion', 'maxTLSVersion'] as const) {
        const v = c.str(options, op, key)
        if (v !== undefined && !TLS.includes(v))
          c.error(
            join(op, key),
            (options.entries.get(key)?.value ?? options).pos,
            `"${v}" is not one of ${TLS.join(', ')}`,
          )
        else if (v !== undefined) versions[key] = v
      }
      const min = TLS.indexOf(versions.minTLSVersion)
      const max = TLS.indexOf(versions.maxTLSVersion)
      if (min >= 0 && max >= 0 && min > max)
        c.error(join(op, 'minTLSVersion'), options.pos, 'minTLSVersion is above maxTLSVersion')
      out.options = plainMap(options)
    }
    return [out]
  })
}
