import { type Checker, join, type MapNode } from '../checker.js'
import { plainMap } from '../plain.js'
import type { Pos } from '../tree.js'
import type { ListenerConfig } from '../types.js'
import {
  addressProblem,
  advertiseProblem,
  cidrProblem,
  edgeAddressProblem,
  edgeAdvertiseProblem,
  resolverProblem,
  serviceProblem,
} from '../values.js'

const BINDINGS = [
  'edge',
  'tunnel',
  'transport',
  'transport_udp',
  'proxy',
  'proxy_udp',
  'edge_transport',
]
const MODES = ['host', 'tproxy', 'proxy']
const DIALER_BINDINGS = ['proxy', 'proxy_udp', 'transport', 'transport_udp']

function at(map: MapNode, key: string) {
  return (map.entries.get(key)?.value ?? map).pos
}

type Check = (value: string) => string | undefined

function tunnel(
  c: Checker,
  options: MapNode | undefined,
  p: string,
  fallback: MapNode,
): Record<string, unknown> {
  const op = join(p, 'options')
  // The router's own default (reference §4); the CLI writes host into the files it generates.
  const mode = c.str(options, op, 'mode') ?? 'tproxy'
  // tproxy:<diverter> is tproxy with a named diverter.
  const effective = mode.startsWith('tproxy:') ? 'tproxy' : mode
  if (options && c.has(options, 'mode') && !MODES.includes(effective)) {
    c.error(
      join(op, 'mode'),
      at(options, 'mode'),
      `mode "${mode}" is not one of host, tproxy, proxy (or tproxy:<diverter>)`,
    )
  }
  /** An option of one mode: ignored (a warning) in another; when bad, an error unless `lenient`. */
  const only = (key: string, wanted: string, check: Check, lenient?: string) => {
    if (!options || !c.has(options, key)) return
    if (effective !== wanted) {
      c.warn(
        join(op, key),
        at(options, key),
        `${key} is ignored in mode ${mode}: the router uses it only with mode ${wanted}`,
      )
      return
    }
    const report = (itemPath: string, pos: Pos, problem: string) => {
      if (lenient) c.warn(itemPath, pos, `${problem}; ${lenient}`)
      else c.error(itemPath, pos, problem)
    }
    if (key === 'services') {
      c.strList(options, op, key, (s, itemPath, pos) => {
        const problem = check(s)
        if (problem) report(itemPath, pos, problem)
      })
      return
    }
    const value = c.str(options, op, key)
    const problem = value === undefined ? undefined : check(value)
    if (problem) report(join(op, key), at(options, key), problem)
  }
  // A resolver the router cannot use is logged, and a dummy one serves instead (reference §4).
  only(
    'resolver',
    'tproxy',
    resolverProblem,
    'the router logs it and starts a dummy resolver (intercepted names do not resolve)',
  )
  only('dnsSvcIpRange', 'tproxy', cidrProblem)
  only('services', 'proxy', serviceProblem)
  if (effective === 'proxy' && !c.has(options, 'services')) {
    c.warn(
      join(op, 'services'),
      (options ?? fallback).pos,
      'a proxy-mode tunnel without services forwards nothing',
    )
  }
  return { ...(options ? plainMap(options) : {}), mode }
}

/** The listeners section: what outside clients connect to. */
export function checkListeners(
  c: Checker,
  root: MapNode,
  hasEdge: boolean,
): ListenerConfig[] | undefined {
  const items = c.list(root, '', 'listeners')
  if (!items) return undefined
  return items.flatMap((node, i) => {
    const p = join('listeners', i)
    const l = c.asMap(node, p)
    if (!l) return []
    c.known(l, p, ['binding', 'address', 'bind', 'advertise', 'options', 'service'])
    const binding = c.str(l, p, 'binding')
    if (!c.has(l, 'binding'))
      c.error(join(p, 'binding'), l.pos, `binding is required: one of ${BINDINGS.join(', ')}`)
    else if (binding !== undefined && !BINDINGS.includes(binding)) {
      c.error(
        join(p, 'binding'),
        at(l, 'binding'),
        `binding "${binding}" is not one of ${BINDINGS.join(', ')}`,
      )
    }
    if (binding === 'edge' && !hasEdge) {
      c.error(
        join(p, 'binding'),
        at(l, 'binding'),
        'an edge listener needs the edge section, which this file does not have',
      )
    }
    const options = c.map(l, p, 'options')
    // An edge listener's options are channel options too, validated at start.
    if (options && binding === 'edge') c.channelOptions(options, join(p, 'options'), true)
    const out: ListenerConfig = { binding: binding ?? '' }
    if (binding === 'proxy' || binding === 'proxy_udp') {
      // Read beside address; the router refuses to start without it (reference §2.7).
      const service = c.str(l, p, 'service')
      if (!c.has(l, 'service') || service === '') {
        c.error(
          join(p, 'service'),
          c.has(l, 'service') ? at(l, 'service') : l.pos,
          `service is required for a ${binding} listener: the name of the service it forwards to, beside address`,
        )
      }
      if (service !== undefined) out.service = service
    }
    if (binding === 'tunnel') {
      out.options = tunnel(c, options, p, l)
      return [out]
    }
    const addressKey = c.has(l, 'address') ? 'address' : 'bind'
    if (c.has(l, 'address') && c.has(l, 'bind')) {
      c.warn(
        join(p, 'bind'),
        at(l, 'bind'),
        'bind is ignored because address is set (the reference router listens on address)',
      )
    }
    const address = c.str(l, p, addressKey)
    if (address === undefined && !c.has(l, addressKey)) {
      c.error(
        join(p, 'address'),
        l.pos,
        'address is required: where to listen, such as tls:0.0.0.0:3022',
      )
    } else if (address !== undefined) {
      const problem =
        addressProblem(address) ?? (binding === 'edge' ? edgeAddressProblem(address) : undefined)
      if (problem) c.error(join(p, addressKey), at(l, addressKey), problem)
      out.address = address
    }
    // The reference router reads options.advertise; the specification lists advertise beside bind.
    const [adPath, adMap] = c.has(options, 'advertise') ? [join(p, 'options'), options] : [p, l]
    if (c.has(options, 'advertise') && c.has(l, 'advertise')) {
      c.warn(
        join(p, 'advertise'),
        at(l, 'advertise'),
        'advertise is ignored because options.advertise is set (the reference router reads that one)',
      )
    }
    const advertise = c.str(adMap, adPath, 'advertise')
    if (!c.has(adMap, 'advertise')) {
      c.error(
        join(p, 'options.advertise'),
        (options ?? l).pos,
        'advertise is required (in options or beside address): the host:port clients use, such as router1.example.com:3022',
      )
    } else if (advertise !== undefined && adMap) {
      const problem =
        binding === 'edge' ? edgeAdvertiseProblem(advertise) : advertiseProblem(advertise)
      if (problem) c.error(join(adPath, 'advertise'), at(adMap, 'advertise'), problem)
      // Written once, where it was read (options keep theirs): the output checks again cleanly.
      if (adMap === l) out.advertise = advertise
    }
    if (options) out.options = plainMap(options)
    return [out]
  })
}

/** The dialers section: how the router terminates services. */
export function checkDialers(c: Checker, root: MapNode) {
  const items = c.list(root, '', 'dialers')
  if (!items) return undefined
  return items.flatMap((node, i) => {
    const p = join('dialers', i)
    const d = c.asMap(node, p)
    if (!d) return []
    c.known(d, p, ['binding', 'options'])
    const binding = c.str(d, p, 'binding')
    if (!c.has(d, 'binding'))
      c.error(
        join(p, 'binding'),
        d.pos,
        `binding is required: one of ${DIALER_BINDINGS.join(', ')}`,
      )
    else if (binding !== undefined && !DIALER_BINDINGS.includes(binding)) {
      c.warn(
        join(p, 'binding'),
        at(d, 'binding'),
        `binding "${binding}" matches no dialer (${DIALER_BINDINGS.join(', ')}); it will never be used`,
      )
    }
    const options = c.map(d, p, 'options')
    if (options) c.int(options, join(p, 'options'), 'mtu', { min: 0 })
    return [
      {
        binding: binding ?? '',
        ...(options ? { options: plainMap(options) } : {}),
      },
    ]
  })
}
