import { createPrivateKey, KeyObject, X509Certificate } from 'node:crypto'
import { existsSync } from 'node:fs'
import { formatDuration } from '../../duration.js'
import { caughtMessage } from '../../errors.js'
import { type Checker, join, type MapNode } from '../checker.js'
import { plainMap } from '../plain.js'
import { readSmallFile, SmallFileError } from '../small-file.js'
import type { TNode } from '../tree.js'
import type { CtrlConfig, IdentityConfig } from '../types.js'
import { addressProblem, identityLocation, quote } from '../values.js'

const ROOT = { line: 1, column: 1 }

export function checkVersion(c: Checker, root: MapNode): void {
  const v = root.entries.get('v')?.value
  if (!v || (v.kind === 'scalar' && v.value === null)) {
    c.error(
      'v',
      root.pos,
      'v is required: add "v: 3" (the only supported version of the file format)',
    )
  } else if (v.kind === 'scalar' && typeof v.value === 'string') {
    const fix = v.fromEnv
      ? 'a value from the environment is always a string: write v: 3'
      : v.quoted
        ? 'remove the quotes'
        : 'write v: 3'
    c.error('v', v.pos, `v must be the integer 3, not the string "${v.value}" (${fix})`)
  } else if (v.kind === 'scalar' && v.float !== undefined) {
    c.error('v', v.pos, `v must be the integer 3, not the float ${v.float} (write 3)`)
  } else if (v.kind !== 'scalar' || typeof v.value !== 'number' || !Number.isInteger(v.value)) {
    c.error('v', v.pos, 'v must be the integer 3')
  } else if (v.value !== 3) {
    c.error('v', v.pos, `version ${v.value} is not supported: only v: 3 is`)
  }
}

const IDENTITY_KEYS = ['cert', 'server_cert', 'key', 'server_key', 'ca', 'alt_server_certs']

/** What `--check-files` read of one identity value: its certificates, or its private key. */
type Material = { certs: X509Certificate[] } | { key: KeyObject } | undefined

/** A certificate block: its body holds no `-`, so a scan that fails stops at the next line of dashes. */
const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g

/** The PEM text's certificates, or why one of them does not parse. */
function certificates(text: string): X509Certificate[] | string {
  const blocks = [...text.matchAll(CERTIFICATE_BLOCK)]
  if (blocks.length === 0) return 'holds no CERTIFICATE PEM block'
  const certs: X509Certificate[] = []
  for (const [i, block] of blocks.entries()) {
    try {
      certs.push(new X509Certificate(block[0]))
    } catch {
      return `holds a CERTIFICATE block (the ${ordinal(i + 1)}) that is not a certificate`
    }
  }
  return certs
}

const ordinal = (n: number) => (n === 1 ? '1st' : n === 2 ? '2nd' : n === 3 ? '3rd' : `${n}th`)

function privateKey(text: string): KeyObject | string {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) return 'holds no PRIVATE KEY PEM block'
  try {
    return createPrivateKey(text)
  } catch {
    return 'holds a PRIVATE KEY block that is not a private key (or one encrypted with a passphrase)'
  }
}

/** A path as messages show it: quoted (so a piece of a value from the environment is hidden). */
const shownPath = (path: string) => quote(path, 200)

function identityValue(
  c: Checker,
  map: MapNode,
  path: string,
  key: string,
  checkFiles: boolean,
  /** Told what was read of the value (with `checkFiles`), for the key and certificate match. */
  read?: (material: Material) => void,
): string | undefined {
  const value = c.str(map, path, key)
  if (value === undefined) return undefined
  const isKey = key === 'key' || key === 'server_key'
  const loc = identityLocation(value, isKey)
  const node = map.entries.get(key)?.value ?? map
  if (typeof loc === 'string') {
    c.error(join(path, key), node.pos, loc)
    return value
  }
  if (!checkFiles || loc.kind === 'engine') return value
  let text = ''
  // A path decoded from %XX escapes may hold a line break: it prints escaped, and short.
  const file = loc.kind === 'file' ? `file ${shownPath(loc.path)}` : ''
  const what = loc.kind === 'file' ? file : 'the inline pem: value'
  if (loc.kind === 'pem') text = loc.pem
  else if (!existsSync(loc.path)) {
    c.error(join(path, key), node.pos, `${file} does not exist`)
    return value
  } else {
    try {
      text = readSmallFile(loc.path)
    } catch (err) {
      const why =
        err instanceof SmallFileError ? err.message : `cannot be read: ${caughtMessage(err)}`
      c.error(join(path, key), node.pos, `${file} ${why}; only regular files are read`)
      return value
    }
  }
  const material = isKey ? privateKey(text) : certificates(text)
  if (typeof material === 'string') c.error(join(path, key), node.pos, `${what} ${material}`)
  else read?.(material instanceof KeyObject ? { key: material } : { certs: material })
  return value
}

/** With `--check-files`: a certificate whose public key is not its private key's is an error. */
function checkPair(
  c: Checker,
  certPath: string,
  cert: Material,
  key: Material,
  keyName: string,
  node: TNode | undefined,
): void {
  const leaf = cert && 'certs' in cert ? cert.certs[0] : undefined
  const privateKey = key && 'key' in key ? key.key : undefined
  if (!leaf || !privateKey || !node) return
  let matches = false
  try {
    matches = leaf.checkPrivateKey(privateKey)
  } catch {
    matches = false
  }
  if (!matches)
    c.error(certPath, node.pos, `the certificate's public key is not the one of ${keyName}`)
}

const WEB_IDENTITY =
  'a web identity needs cert, server_cert, key and ca (the router refuses it otherwise)'

/** Which keys must be there: cert and key for the router, all four for a web server (§3). */
const REQUIRED: Record<'router' | 'web', [key: string, what: string][]> = {
  router: [
    ['cert', 'the client certificate of the router (its id is the certificate CN)'],
    ['key', 'the private key of cert'],
  ],
  web: ['cert', 'server_cert', 'key', 'ca'].map((key): [string, string] => [key, WEB_IDENTITY]),
}

/** The identity section: certificate, key and CA locations. */
export function checkIdentity(
  c: Checker,
  map: MapNode,
  path: string,
  checkFiles: boolean,
  required: keyof typeof REQUIRED,
): IdentityConfig {
  c.known(map, path, IDENTITY_KEYS)
  const out: IdentityConfig = {}
  const material: Partial<Record<string, Material>> = {}
  for (const key of ['cert', 'server_cert', 'key', 'server_key', 'ca'] as const) {
    const value = identityValue(c, map, path, key, checkFiles, (m) => {
      material[key] = m
    })
    if (value !== undefined) out[key] = value
  }
  const at = (key: string) => map.entries.get(key)?.value
  checkPair(c, join(path, 'cert'), material.cert, material.key, `${path}.key`, at('cert'))
  // server_key falls back to key, as the reference router takes it.
  const serverKey = c.has(map, 'server_key') ? 'server_key' : 'key'
  checkPair(
    c,
    join(path, 'server_cert'),
    material.server_cert,
    material[serverKey],
    `${path}.${serverKey}`,
    at('server_cert'),
  )
  for (const [key, what] of REQUIRED[required]) {
    if (!c.has(map, key)) c.missing(map, ROOT, path, key, what)
  }
  const alts = c.list(map, path, 'alt_server_certs')
  if (alts) {
    out.alt_server_certs = []
    alts.forEach((node, i) => {
      const p = join(join(path, 'alt_server_certs'), i)
      const alt = c.asMap(node, p)
      if (!alt) return
      c.known(alt, p, ['server_cert', 'server_key'])
      let certMaterial: Material
      let keyMaterial: Material
      const cert = identityValue(c, alt, p, 'server_cert', checkFiles, (m) => {
        certMaterial = m
      })
      if (!c.has(alt, 'server_cert'))
        c.missing(alt, ROOT, p, 'server_cert', 'each alternate server certificate needs its chain')
      const key = identityValue(c, alt, p, 'server_key', checkFiles, (m) => {
        keyMaterial = m
      })
      const keyName = key === undefined ? `${path}.key` : `${p}.server_key`
      checkPair(
        c,
        join(p, 'server_cert'),
        certMaterial,
        key === undefined ? material.key : keyMaterial,
        keyName,
        alt.entries.get('server_cert')?.value,
      )
      out.alt_server_certs?.push({ server_cert: cert ?? '', ...(key ? { server_key: key } : {}) })
    })
  }
  return out
}

const CTRL_KEYS = [
  'endpoint',
  'endpoints',
  'bind',
  'defaultRequestTimeout',
  'heartbeats',
  'options',
  'startupTimeout',
  'endpointsFile',
  'rateLimiter',
  'listeners',
]

function address(c: Checker, map: MapNode, path: string, key: string): string | undefined {
  const value = c.str(map, path, key)
  const problem = value === undefined ? undefined : addressProblem(value)
  if (problem) c.error(join(path, key), (map.entries.get(key)?.value ?? map).pos, problem)
  return value
}

/** The ctrl section: how the router reaches the controller. */
export function checkCtrl(c: Checker, map: MapNode): CtrlConfig {
  const path = 'ctrl'
  c.known(map, path, CTRL_KEYS)
  const out: CtrlConfig = {
    defaultRequestTimeout: formatDuration(
      c.durationMs(map, path, 'defaultRequestTimeout', { def: 5000 }),
    ),
  }
  const endpoint = address(c, map, path, 'endpoint')
  if (endpoint !== undefined) out.endpoint = endpoint
  if (c.has(map, 'endpoint') && c.has(map, 'endpoints')) {
    // The router never reads endpoints then (seed: "When both are given, endpoints is ignored").
    c.warn(
      join(path, 'endpoints'),
      (map.entries.get('endpoints')?.value ?? map).pos,
      'endpoints is ignored because endpoint is set',
    )
  } else {
    const endpoints = c.strList(map, path, 'endpoints', (e, itemPath, pos) => {
      const problem = addressProblem(e)
      if (problem) c.error(itemPath, pos, problem)
    })
    if (endpoints) out.endpoints = endpoints
  }
  // An empty list names no controller either.
  const listed = c.entry(map, 'endpoints')
  const noEndpoints = listed === undefined || (listed.kind === 'seq' && listed.items.length === 0)
  if (!c.has(map, 'endpoint') && noEndpoints) {
    c.error(
      join(path, 'endpoint'),
      map.pos,
      'ctrl needs endpoint (or endpoints): the controller address, such as tls:ctrl.example.com:6262',
    )
  }
  const bind = c.str(map, path, 'bind')
  if (bind !== undefined) out.bind = bind
  const options = c.map(map, path, 'options')
  if (options) {
    c.channelOptions(options, join(path, 'options'), true)
    out.options = plainMap(options)
  }
  const heartbeats = c.map(map, path, 'heartbeats')
  if (heartbeats) {
    out.heartbeats = plainMap(heartbeats)
    for (const key of [
      'sendInterval',
      'checkInterval',
      'closeUnresponsiveTimeout',
      'unresponsiveAfter',
    ]) {
      if (c.has(heartbeats, key))
        c.durationMs(heartbeats, join(path, 'heartbeats'), key, { def: 0 })
    }
  }
  if (c.has(map, 'startupTimeout'))
    c.durationMs(map, path, 'startupTimeout', { def: 30_000, min: 0 })
  return out
}
