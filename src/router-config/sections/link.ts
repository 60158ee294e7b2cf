import { formatDuration } from '../../duration.js'
import { type Checker, join, type MapNode } from '../checker.js'
import { plainMap } from '../plain.js'
import type { Backoff, LinkConfig } from '../types.js'
import { addressProblem, advertiseProblem } from '../values.js'

const MS = { min: 10, max: 24 * 3_600_000 }
const DEFAULTS = {
  healthyDialBackoff: { min: 5_000, max: 300_000, factor: 1.5 },
  unhealthyDialBackoff: { min: 60_000, max: 3_600_000, factor: 10 },
}

/** Group names: a string or a list of strings; `[default]` when absent. */
export function groups(c: Checker, map: MapNode, path: string): string[] {
  const node = c.entry(map, 'groups')
  if (node === undefined) return ['default']
  if (node.kind === 'scalar' && typeof node.value === 'string') return [node.value]
  const list = c.strList(map, path, 'groups')
  return list && list.length > 0 ? list : ['default']
}

function binding(c: Checker, map: MapNode, path: string, what: string): void {
  const value = c.str(map, path, 'binding')
  if (!c.has(map, 'binding'))
    c.error(
      join(path, 'binding'),
      map.pos,
      `binding is required: ${what} support only binding: transport`,
    )
  else if (value !== undefined && value !== 'transport') {
    c.error(
      join(path, 'binding'),
      (map.entries.get('binding')?.value ?? map).pos,
      `binding "${value}" is not supported: ${what} support only transport`,
    )
  }
}

function backoff(c: Checker, dialer: MapNode, path: string, key: keyof typeof DEFAULTS): Backoff {
  const d = DEFAULTS[key]
  const p = join(path, key)
  const map = c.map(dialer, path, key)
  c.known(map, p, ['minRetryInterval', 'maxRetryInterval', 'retryBackoffFactor'])
  const min = c.durationMs(map, p, 'minRetryInterval', { def: d.min, ...MS })
  const max = c.durationMs(map, p, 'maxRetryInterval', { def: d.max, ...MS })
  const factor = c.num(map, p, 'retryBackoffFactor', { def: d.factor, min: 1, max: 100 })
  // Checked after defaults are filled in: setting only min above the default max is an error too.
  if (min > max) {
    const node =
      map?.entries.get('minRetryInterval')?.value ??
      map?.entries.get('maxRetryInterval')?.value ??
      map ??
      dialer
    c.error(
      join(p, 'minRetryInterval'),
      node.pos,
      `minRetryInterval ${formatDuration(min)} is above maxRetryInterval ${formatDuration(max)}${c.has(map, 'maxRetryInterval') ? '' : ' (the default)'}`,
    )
  }
  return {
    minRetryInterval: formatDuration(min),
    maxRetryInterval: formatDuration(max),
    retryBackoffFactor: factor,
  }
}

/** The link section: router-to-router listeners and dialers (the mesh). */
export function checkLink(c: Checker, map: MapNode): LinkConfig {
  const path = 'link'
  c.known(map, path, [
    'listeners',
    'dialers',
    'heartbeats',
    'payloadSenderQueueSize',
    'ackSenderQueueSize',
  ])
  c.int(map, path, 'payloadSenderQueueSize', { min: 1 })
  c.int(map, path, 'ackSenderQueueSize', { min: 1 })
  c.map(map, path, 'heartbeats')
  const out: LinkConfig = { listeners: [], dialers: [] }
  c.list(map, path, 'listeners')?.forEach((node, i) => {
    const p = join(join(path, 'listeners'), i)
    const l = c.asMap(node, p)
    if (!l) return
    c.known(l, p, ['binding', 'bind', 'advertise', 'groups', 'options', 'bindInterface'])
    binding(c, l, p, 'link listeners')
    const bind = c.str(l, p, 'bind')
    if (!c.has(l, 'bind'))
      c.error(
        join(p, 'bind'),
        l.pos,
        'bind is required: the address to listen on, such as tls:0.0.0.0:10080',
      )
    else if (bind !== undefined) {
      const problem = addressProblem(bind)
      if (problem) c.error(join(p, 'bind'), (l.entries.get('bind')?.value ?? l).pos, problem)
    }
    const advertise = c.str(l, p, 'advertise')
    if (!c.has(l, 'advertise'))
      c.error(
        join(p, 'advertise'),
        l.pos,
        'advertise is required: the host:port other routers dial, such as router1.example.com:10080',
      )
    else if (advertise !== undefined) {
      const problem = advertiseProblem(advertise)
      if (problem)
        c.error(join(p, 'advertise'), (l.entries.get('advertise')?.value ?? l).pos, problem)
    }
    const options = c.map(l, p, 'options')
    if (options) c.channelOptions(options, join(p, 'options'), false)
    out.listeners.push({
      binding: 'transport',
      bind: bind ?? '',
      advertise: advertise ?? '',
      groups: groups(c, l, p),
      ...(options ? { options: plainMap(options) } : {}),
    })
  })
  c.list(map, path, 'dialers')?.forEach((node, i) => {
    const p = join(join(path, 'dialers'), i)
    const d = c.asMap(node, p)
    if (!d) return
    c.known(d, p, [
      'binding',
      'bind',
      'split',
      'groups',
      'options',
      'healthyDialBackoff',
      'unhealthyDialBackoff',
      'maxDefaultConnections',
      'maxAckConnections',
      'startupDelay',
    ])
    binding(c, d, p, 'link dialers')
    c.int(d, p, 'maxDefaultConnections', { min: 1, max: 100 })
    c.int(d, p, 'maxAckConnections', { min: 0, max: 100 })
    if (c.has(d, 'startupDelay')) c.durationMs(d, p, 'startupDelay', { def: 3000, min: 0 })
    const bind = c.str(d, p, 'bind')
    const options = c.map(d, p, 'options')
    if (options) c.channelOptions(options, join(p, 'options'), false)
    out.dialers.push({
      binding: 'transport',
      ...(bind !== undefined ? { bind } : {}),
      split: c.bool(d, p, 'split', true),
      groups: groups(c, d, p),
      ...(options ? { options: plainMap(options) } : {}),
      healthyDialBackoff: backoff(c, d, p, 'healthyDialBackoff'),
      unhealthyDialBackoff: backoff(c, d, p, 'unhealthyDialBackoff'),
    })
  })
  return out
}
