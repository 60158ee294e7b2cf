import { caughtMessage } from '../errors.js'
import { Checker, type Checker as CheckerType, type MapNode, type Problem } from './checker.js'
import { checkCharacters, decodeConfig } from './decode.js'
import { type Hider, hideIn, substitutedHider } from './hide.js'
import { plainMap } from './plain.js'
import { checkCtrl, checkIdentity, checkVersion } from './sections/core.js'
import { checkLink } from './sections/link.js'
import { checkDialers, checkListeners } from './sections/listeners.js'
import {
  checkCsr,
  checkEdge,
  checkForwarder,
  checkHealthChecks,
  checkMetrics,
  checkProfile,
  checkTrace,
  checkWeb,
} from './sections/other.js'
import { parseTree } from './tree.js'
import type { RouterConfig } from './types.js'
import { whileHiding } from './values.js'

export type { Problem } from './checker.js'
export type { RouterConfig } from './types.js'

export interface CheckResult {
  /** The effective configuration with defaults; undefined when the file is not a YAML map. */
  config: RouterConfig | undefined
  /**
   * The same with each value of 8 characters or more taken from the environment shown as
   * `${NAME}`, as the problems show them (which also hide pieces of such values they quote):
   * what `--print` prints.
   */
  printable: RouterConfig | undefined
  errors: Problem[]
  warnings: Problem[]
}

export interface CheckOptions {
  /** Also verify that identity files exist and hold the PEM they should (off by default). */
  checkFiles?: boolean
}

const SECTIONS = [
  'v',
  'identity',
  'ctrl',
  'dialers',
  'edge',
  'forwarder',
  'healthChecks',
  'link',
  'listeners',
  'metrics',
  'trace',
  'transport',
  'profile',
  'web',
]
// Read by the reference router although the specification does not describe them.
const ALSO_READ = [
  'csr',
  'enableDebugOps',
  'plugins',
  'proxy',
  'tls',
  'connectEvents',
  'interfaceDiscovery',
]

const START_RULES: [string, string][] = [
  ['dialers', 'without dialers the router cannot connect to terminate services'],
  [
    'edge',
    'without edge the router runs in fabric-only mode: no edge functionality, no SDK connectivity',
  ],
  ['link', 'without link the router neither dials nor accepts other routers (no mesh)'],
  ['listeners', 'without listeners the router accepts no external on-ramp connections'],
]

/** The forwarder section; left empty, the reference router warns and uses every default. */
function forwarderMap(c: CheckerType, root: MapNode): MapNode | undefined {
  const node = root.entries.get('forwarder')?.value
  if (node?.kind === 'scalar' && node.value === null)
    c.warn('forwarder', node.pos, 'forwarder is empty: every forwarder setting takes its default')
  return c.map(root, '', 'forwarder')
}

function check(c: CheckerType, root: MapNode, options: CheckOptions): RouterConfig {
  c.known(root, '', [...SECTIONS, ...ALSO_READ])
  checkVersion(c, root)
  const checkFiles = options.checkFiles ?? false
  const identityMap = c.map(root, '', 'identity')
  if (!c.has(root, 'identity'))
    c.error(
      'identity',
      root.pos,
      'identity is required: the certificates and key of the router (cert, key, server_cert, ca)',
    )
  const ctrlMap = c.map(root, '', 'ctrl')
  if (!c.has(root, 'ctrl'))
    c.error(
      'ctrl',
      root.pos,
      'ctrl is required: how the router reaches the controller (ctrl.endpoint)',
    )
  const edgeMap = c.map(root, '', 'edge')
  const config: RouterConfig = {
    v: 3,
    identity: identityMap ? checkIdentity(c, identityMap, 'identity', checkFiles, 'router') : {},
    ctrl: ctrlMap ? checkCtrl(c, ctrlMap) : { defaultRequestTimeout: '5s' },
    forwarder: checkForwarder(c, forwarderMap(c, root)),
    healthChecks: checkHealthChecks(c, c.map(root, '', 'healthChecks')),
    metrics: checkMetrics(c, c.map(root, '', 'metrics')),
    profile: checkProfile(c, c.map(root, '', 'profile')),
  }
  const dialers = checkDialers(c, root)
  if (dialers) config.dialers = dialers
  const rootCsr = c.map(root, '', 'csr')
  // A root csr is the one the reference router uses: edge.csr is then never read at start.
  if (edgeMap) config.edge = checkEdge(c, edgeMap, rootCsr === undefined)
  const link = c.map(root, '', 'link')
  if (link) config.link = checkLink(c, link)
  const listeners = checkListeners(c, root, edgeMap !== undefined)
  if (listeners) config.listeners = listeners
  // The reference router loads its edge listener with the edge section, and stops without one.
  if (edgeMap && !listeners?.some((l) => l.binding === 'edge')) {
    c.error(
      'listeners',
      (root.entries.get('listeners')?.value ?? root).pos,
      listeners
        ? 'the edge section needs a listener with binding: edge (where SDKs connect), and listeners has none'
        : 'the edge section needs listeners, a list with a binding: edge listener (where SDKs connect)',
    )
  }
  const trace = c.map(root, '', 'trace')
  if (trace) config.trace = checkTrace(c, trace)
  const transport = c.map(root, '', 'transport')
  if (transport) config.transport = plainMap(transport)
  const web = checkWeb(c, root, checkFiles)
  if (web) config.web = web
  if (rootCsr) checkCsr(c, rootCsr, 'csr', true)

  for (const [section, why] of START_RULES) {
    // With edge, missing listeners are the error above.
    if (section === 'listeners' && edgeMap) continue
    if (!c.has(root, section)) c.warn(section, root.pos, `${section} is not set: ${why}`)
  }
  if (!c.has(edgeMap, 'csr') && !rootCsr) {
    c.warn(
      'edge.csr',
      edgeMap?.pos ?? root.pos,
      'edge.csr is not set: the router can neither enroll nor renew its enrollment',
    )
  }
  return config
}

const byPlace = (a: Problem, b: Problem) => a.line - b.line || a.column - b.column

/**
 * Loads and checks a router configuration file, its text or its bytes (UTF-8, or UTF-16 with a
 * byte order mark, as the router reads them), with `env` for `${NAME}` substitution.
 * Never throws: every problem comes back located, and all of them in one pass.
 */
export function checkRouterConfig(
  file: string | Uint8Array,
  env: Record<string, string | undefined>,
  options: CheckOptions = {},
): CheckResult {
  const c = new Checker()
  let config: RouterConfig | undefined
  /** Hides the environment's values in what is printed; built once the file is parsed. */
  let hide: Hider | undefined
  try {
    // Bytes are decoded here; anything else is read as text (a caller without types may pass any).
    const decoded =
      file instanceof Uint8Array ? decodeConfig(file) : checkCharacters(String(file ?? ''))
    if (!('text' in decoded)) {
      c.error('', decoded.pos, decoded.message)
      return { config, printable: config, errors: c.errors, warnings: c.warnings }
    }
    const parsed = parseTree(decoded.text, env)
    hide = substitutedHider(parsed.substituted)
    for (const p of parsed.errors) c.error(p.path, p.pos, p.message)
    for (const p of parsed.warnings) c.warn(p.path, p.pos, p.message)
    const root = parsed.root
    if (root && root.kind !== 'map') {
      const what = root.kind === 'seq' ? 'a list' : root.value === null ? 'empty' : 'a single value'
      c.error(
        '',
        root.pos,
        `the file must be a YAML map of sections (v, ctrl, identity, ...), not ${what}`,
      )
    } else if (root) {
      config = whileHiding(hide?.whole, () => check(c, root, options))
    }
  } catch (err) {
    c.error('', { line: 1, column: 1 }, `internal error while checking: ${caughtMessage(err)}`)
  }
  const shownProblems = (problems: Problem[]) =>
    hide ? problems.map((p) => ({ ...p, message: hide.message(p.message) })) : problems
  return {
    config,
    printable: hide && config ? (hideIn(config, hide.whole) as RouterConfig) : config,
    errors: shownProblems(c.errors.sort(byPlace)),
    warnings: shownProblems(c.warnings.sort(byPlace)),
  }
}
