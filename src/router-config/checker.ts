import { durationProblem, formatDuration, GO_MAX_DURATION, parseDuration } from '../duration.js'
import type { Pos, TNode } from './tree.js'

/** One finding, located in the file. */
export interface Problem {
  path: string
  line: number
  column: number
  message: string
}

export type MapNode = Extract<TNode, { kind: 'map' }>

/** Levenshtein distance, one row at a time: `above` holds the distances from a's previous prefix. */
function distance(a: string, b: string): number {
  let above = Array.from({ length: b.length + 1 }, (_, j) => j)
  let last = b.length
  for (let i = 0; i < a.length; i++) {
    let diagonal = i // above[0]
    let left = i + 1 // this row's first cell
    const row = [left]
    for (const [j, up] of above.slice(1).entries()) {
      left = Math.min(up + 1, left + 1, diagonal + (a[i] === b[j] ? 0 : 1))
      row.push(left)
      diagonal = up
    }
    above = row
    last = left
  }
  return last
}

export function suggest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestD = Number.POSITIVE_INFINITY
  const within = Math.max(2, Math.floor(key.length / 4))
  for (const k of known) {
    // The lengths' difference is a lower bound of the distance: a key far longer than any known
    // one (a merged or aliased key of a megabyte) is never compared letter by letter.
    if (Math.abs(key.length - k.length) > within) continue
    const d = k.toLowerCase() === key.toLowerCase() ? 0 : distance(key, k)
    if (d < bestD) {
      best = k
      bestD = d
    }
  }
  return bestD <= within ? best : undefined
}

export const join = (path: string, key: string | number) =>
  typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`

export const describe = (n: TNode): string =>
  n.kind === 'map'
    ? 'a map'
    : n.kind === 'seq'
      ? 'a list'
      : n.value === null
        ? 'empty'
        : n.float !== undefined
          ? `float ${n.float}`
          : n.fromEnv
            ? `${typeof n.value} ${JSON.stringify(n.value)} (a value from the environment is always a string)`
            : `${typeof n.value} ${JSON.stringify(n.value)}`

/** The channel options' counts and their bounds (reference §2.3). */
const CHANNEL_COUNTS = [
  ['maxQueuedConnects', 1, 5000],
  ['maxOutstandingConnects', 1, 1000],
  ['connectTimeoutMs', 30, 60000],
] as const

interface IntRule {
  def?: number
  min?: number
  max?: number
  what?: string
  /**
   * Out of range is only a warning, as the reference router takes it: `clamp` uses the nearest
   * bound, `default` the default, `keep` the value as written.
   */
  outOfRange?: 'clamp' | 'default' | 'keep'
}

/** Collects problems and reads typed values, falling back to defaults where a value is bad. */
export class Checker {
  readonly errors: Problem[] = []
  readonly warnings: Problem[] = []

  error(path: string, pos: Pos, message: string): void {
    this.errors.push({ path, line: pos.line, column: pos.column, message })
  }

  warn(path: string, pos: Pos, message: string): void {
    this.warnings.push({ path, line: pos.line, column: pos.column, message })
  }

  /** The value of a key, or undefined when absent or null. */
  entry(map: MapNode | undefined, key: string): TNode | undefined {
    const v = map?.entries.get(key)?.value
    return v && !(v.kind === 'scalar' && v.value === null) ? v : undefined
  }

  has(map: MapNode | undefined, key: string): boolean {
    return this.entry(map, key) !== undefined
  }

  /** Warns about keys that are not in `known`, with a suggestion when one is close. */
  known(map: MapNode | undefined, path: string, known: readonly string[]): void {
    if (!map) return
    for (const [key, { keyPos }] of map.entries) {
      if (known.includes(key)) continue
      const close = suggest(key, known)
      this.warn(
        join(path, key),
        keyPos,
        `unknown key "${key}"${close ? `; did you mean "${close}"?` : ''} (it is ignored)`,
      )
    }
  }

  asMap(node: TNode | undefined, path: string): MapNode | undefined {
    if (node === undefined) return undefined
    if (node.kind === 'map') return node
    this.error(path, node.pos, `must be a map of settings, not ${describe(node)}`)
    return undefined
  }

  map(parent: MapNode | undefined, path: string, key: string): MapNode | undefined {
    return this.asMap(this.entry(parent, key), join(path, key))
  }

  /** Marks a required key missing, at its parent's position. */
  missing(
    parent: MapNode | undefined,
    parentPos: Pos,
    path: string,
    key: string,
    what: string,
  ): void {
    this.error(join(path, key), parent?.pos ?? parentPos, `${key} is required: ${what}`)
  }

  list(parent: MapNode | undefined, path: string, key: string): TNode[] | undefined {
    const node = this.entry(parent, key)
    if (node === undefined) return undefined
    if (node.kind === 'seq') return node.items
    this.error(join(path, key), node.pos, `must be a list, not ${describe(node)}`)
    return undefined
  }

  str(parent: MapNode | undefined, path: string, key: string): string | undefined {
    const node = this.entry(parent, key)
    if (node === undefined) return undefined
    if (node.kind === 'scalar' && typeof node.value === 'string') return node.value
    if (
      node.kind === 'scalar' &&
      (typeof node.value === 'number' || typeof node.value === 'boolean')
    ) {
      this.error(join(path, key), node.pos, `must be a string, not ${describe(node)} (quote it)`)
    } else this.error(join(path, key), node.pos, `must be a string, not ${describe(node)}`)
    return undefined
  }

  /**
   * The strings of the list under `key` (any other item is an error); `each` is called with every
   * string, its own path and its position (its index in the file's list, whatever came before it).
   */
  strList(
    parent: MapNode | undefined,
    path: string,
    key: string,
    each?: (value: string, itemPath: string, pos: Pos) => void,
  ): string[] | undefined {
    const items = this.list(parent, path, key)
    if (!items) return undefined
    const out: string[] = []
    items.forEach((item, i) => {
      const itemPath = join(join(path, key), i)
      if (item.kind === 'scalar' && typeof item.value === 'string') {
        out.push(item.value)
        each?.(item.value, itemPath, item.pos)
      } else this.error(itemPath, item.pos, `must be a string, not ${describe(item)}`)
    })
    return out
  }

  bool(parent: MapNode | undefined, path: string, key: string, def: boolean): boolean {
    const node = this.entry(parent, key)
    if (node === undefined) return def
    if (node.kind === 'scalar' && typeof node.value === 'boolean') return node.value
    this.error(join(path, key), node.pos, `must be true or false, not ${describe(node)}`)
    return def
  }

  int(
    parent: MapNode | undefined,
    path: string,
    key: string,
    rule: IntRule & { def: number },
  ): number
  int(parent: MapNode | undefined, path: string, key: string, rule: IntRule): number | undefined
  int(parent: MapNode | undefined, path: string, key: string, rule: IntRule): number | undefined {
    const node = this.entry(parent, key)
    if (node === undefined) return rule.def
    const p = join(path, key)
    const range =
      rule.min !== undefined && rule.max !== undefined
        ? `an integer from ${rule.min} to ${rule.max}`
        : rule.min !== undefined
          ? `an integer of at least ${rule.min}`
          : 'an integer'
    if (
      node.kind !== 'scalar' ||
      typeof node.value !== 'number' ||
      !Number.isInteger(node.value) ||
      node.float !== undefined
    ) {
      this.error(
        p,
        node.pos,
        `must be ${range}${rule.what ? ` (${rule.what})` : ''}, not ${describe(node)}`,
      )
      return rule.def
    }
    if (
      (rule.min !== undefined && node.value < rule.min) ||
      (rule.max !== undefined && node.value > rule.max)
    ) {
      const message = `${node.value} is out of range: must be ${range}${rule.what ? ` (${rule.what})` : ''}`
      if (rule.outOfRange === undefined) {
        this.error(p, node.pos, message)
        return rule.def
      }
      const used =
        rule.outOfRange === 'keep'
          ? node.value
          : rule.outOfRange === 'default'
            ? rule.def
            : rule.min !== undefined && node.value < rule.min
              ? rule.min
              : rule.max
      this.warn(
        p,
        node.pos,
        rule.outOfRange === 'keep'
          ? `${message}; the router accepts it as written`
          : `${message}; the router uses ${used}`,
      )
      return used
    }
    return node.value
  }

  num(
    parent: MapNode | undefined,
    path: string,
    key: string,
    rule: { def: number; min: number; max: number },
  ): number {
    const node = this.entry(parent, key)
    if (node === undefined) return rule.def
    const p = join(path, key)
    if (node.kind !== 'scalar' || typeof node.value !== 'number') {
      this.error(
        p,
        node.pos,
        `must be a number from ${rule.min} to ${rule.max}, not ${describe(node)}`,
      )
      return rule.def
    }
    if (node.value < rule.min || node.value > rule.max) {
      this.error(
        p,
        node.pos,
        `${node.value} is out of range: must be from ${rule.min} to ${rule.max}`,
      )
      return rule.def
    }
    return node.value
  }

  /**
   * Channel options (reference §2.3): `maxQueuedConnects` 1..5000, `maxOutstandingConnects`
   * 1..1000, `connectTimeoutMs` 30..60000 and a `writeTimeout` duration; other keys are the
   * channel's own and pass. The router ignores a non-integer count, so that is a warning. It
   * refuses an out-of-range one where it validates the options (`enforced`: ctrl and edge
   * listeners, an error); elsewhere it is a warning.
   */
  channelOptions(options: MapNode, path: string, enforced: boolean): void {
    for (const [key, min, max] of CHANNEL_COUNTS) {
      const node = this.entry(options, key)
      if (node === undefined) continue
      const p = join(path, key)
      const range = `an integer from ${min} to ${max}`
      if (
        node.kind !== 'scalar' ||
        typeof node.value !== 'number' ||
        !Number.isInteger(node.value) ||
        node.float !== undefined
      ) {
        this.warn(p, node.pos, `must be ${range}, not ${describe(node)}: the router ignores it`)
      } else if (node.value < min || node.value > max) {
        const message = `${node.value} is out of range: must be ${range}`
        if (enforced) this.error(p, node.pos, `${message} (the reference router refuses it)`)
        else this.warn(p, node.pos, message)
      }
    }
    if (this.has(options, 'writeTimeout'))
      this.durationMs(options, path, 'writeTimeout', { def: 0, min: 0 })
  }

  /** A Go duration string; returns milliseconds. */
  durationMs(
    parent: MapNode | undefined,
    path: string,
    key: string,
    rule: { def: number; min?: number; max?: number },
  ): number {
    const node = this.entry(parent, key)
    if (node === undefined) return rule.def
    const p = join(path, key)
    const text = node.kind === 'scalar' && typeof node.value === 'string' ? node.value : undefined
    const ms = text === undefined ? undefined : parseDuration(text)
    if (text !== undefined && ms === undefined && durationProblem(text) === 'overflow') {
      this.error(
        p,
        node.pos,
        `${text} is longer than a Go duration holds (at most ${GO_MAX_DURATION}): the router refuses it`,
      )
      return rule.def
    }
    if (text === undefined || ms === undefined) {
      const hint =
        node.kind === 'scalar' && typeof node.value === 'number'
          ? ' (a number needs a unit, such as 10s)'
          : ''
      this.error(
        p,
        node.pos,
        `must be a duration such as 300ms, 10s, 1m or 1h30m, not ${describe(node)}${hint}; units are ns, us, ms, s, m, h`,
      )
      return rule.def
    }
    const tooSmall = rule.min === undefined ? ms <= 0 : ms < rule.min
    if (tooSmall || (rule.max !== undefined && ms > rule.max)) {
      const low = rule.min === undefined ? 'more than 0' : formatDuration(rule.min)
      const bounds =
        rule.max !== undefined
          ? `from ${low} to ${formatDuration(rule.max)}`
          : rule.min === undefined
            ? low
            : `at least ${low}`
      this.error(p, node.pos, `${text} is out of range: must be ${bounds}`)
      return rule.def
    }
    return ms
  }
}
