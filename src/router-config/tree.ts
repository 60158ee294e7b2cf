import {
  type Alias,
  type Document,
  isAlias,
  isMap,
  isNode,
  isScalar,
  isSeq,
  LineCounter,
  parseAllDocuments,
  type Scalar,
  type Schema,
  visit,
  type YAMLMap,
  type YAMLSeq,
} from 'yaml'

/** Where something is in the file: 1-based line and column. */
export interface Pos {
  line: number
  column: number
}

/** A YAML value with its position: what the checker walks. */
export type TNode =
  | { kind: 'map'; pos: Pos; entries: Map<string, { keyPos: Pos; value: TNode }> }
  | { kind: 'seq'; pos: Pos; items: TNode[] }
  | {
      kind: 'scalar'
      pos: Pos
      value: string | number | boolean | null
      quoted: boolean
      /** The source text of a YAML float (`3.0`, `1e3`, `!!float 3`): a number, never an integer. */
      float?: string
      /** Its text took a value from the environment (substitution comes after typing: a string). */
      fromEnv?: boolean
    }

export interface RawProblem {
  path: string
  pos: Pos
  message: string
}

export interface ParsedTree {
  root: TNode | undefined
  errors: RawProblem[]
  warnings: RawProblem[]
  /** Each value taken from the environment, with its variable's name. */
  substituted?: Map<string, string>
}

const SPECIAL = new Set([
  '*',
  '#',
  '$',
  '@',
  '!',
  '?',
  '-',
  '0',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  '8',
  '9',
])
const NAME_CHAR = /[A-Za-z0-9_]/

/**
 * Go's os.Getenv-style name scan of the text after the `$` at `at - 1` (see os.Expand): returns the
 * name and the characters consumed. `closeFrom(k)` is the index of the first `}` at or after `k`
 * (-1: none), which the caller keeps between calls: a `${` without its `}` would otherwise be read
 * to the end of the text once per `$` (Go does so: quadratic in the text's length).
 */
function shellName(s: string, at: number, closeFrom: (k: number) => number): [string, number] {
  if (s[at] === '{') {
    if (s.length - at > 2 && SPECIAL.has(s.charAt(at + 1)) && s[at + 2] === '}') {
      return [s.charAt(at + 1), 3]
    }
    const close = closeFrom(at + 1)
    if (close < 0) return ['', 1]
    return close === at + 1 ? ['', 2] : [s.slice(at + 1, close), close - at + 1]
  }
  if (SPECIAL.has(s.charAt(at))) return [s.charAt(at), 1]
  let i = at
  while (i < s.length && NAME_CHAR.test(s.charAt(i))) i++
  return [s.slice(at, i), i - at]
}

/**
 * Expands `${NAME}` and `$NAME` exactly as the reference router does (Go's os.ExpandEnv): unset
 * names become empty, and `unset` is called with each of them.
 */
export function expandEnv(
  s: string,
  env: Record<string, string | undefined>,
  unset: (name: string) => void,
  /** Told each value substituted, with its variable's name. */
  used?: (name: string, value: string) => void,
): string {
  if (!s.includes('$')) return s
  // The first `}` at or after `searched` is `close` (-1: none), for every index up to `close`.
  let searched = -1
  let close = -1
  const closeFrom = (k: number): number => {
    if (searched < 0 || k < searched || (close >= 0 && k > close)) {
      searched = k
      close = s.indexOf('}', k)
    }
    return close
  }
  let out = ''
  let i = 0
  for (let j = 0; j < s.length; j++) {
    if (s[j] === '$' && j + 1 < s.length) {
      out += s.slice(i, j)
      const [name, w] = shellName(s, j + 1, closeFrom)
      if (name === '' && w === 0) out += '$'
      else if (name !== '') {
        // Own variables only: `$constructor` is no variable, whatever the object's prototype has.
        const value = Object.hasOwn(env, name) ? env[name] : undefined
        if (value === undefined) unset(name)
        else used?.(name, value)
        out += value ?? ''
      }
      j += w
      i = j + 1
    }
  }
  return out + s.slice(i)
}

const FLOAT_TAG = 'tag:yaml.org,2002:float'

/**
 * A `<<` merge key as YAML 1.1 reads it (plain, not quoted): the yaml package resolves it to a
 * scalar whose value is the symbol `<<`.
 */
function isMergeKey(key: unknown): boolean {
  return (
    isScalar(key) &&
    typeof key.value === 'symbol' &&
    key.value.description === '<<' &&
    key.type === 'PLAIN'
  )
}

/**
 * Bounds on what the aliases expand to: values, and characters of scalars and keys. Aliases
 * themselves are not counted: a file may use as many as it likes while what they expand to stays
 * small (reference §1.2: aliases work).
 */
export const MAX_NODES = 100_000
export const MAX_CHARACTERS = 10_000_000
/** Unset environment variables warned of, at most (see `unsetVariable`). */
export const MAX_UNSET_WARNINGS = 100

/**
 * A plain scalar's value as yaml.v2 reads it where YAML 1.1 and Go disagree: base 60 (`1:30`, 90
 * to the yaml package) is a string to yaml.v2, whose numbers are Go's `strconv.ParseInt(s, 0, 64)`
 * of the text without underscores; and that takes `0o3` (3), a string to the yaml package.
 */
function asYamlV2Reads(source: string, value: unknown): unknown {
  if (typeof value === 'number' && source.includes(':')) return source
  const octal = /^([-+]?)0o([0-7_]+)$/.exec(source)
  if (typeof value === 'string' && octal) {
    const digits = (octal[2] ?? '').replaceAll('_', '')
    if (digits !== '') return (octal[1] === '-' ? -1 : 1) * Number.parseInt(digits, 8)
  }
  return value
}

/** Ends a conversion that went over the expansion budget. */
class ExpansionLimit extends Error {
  constructor(readonly problem: RawProblem) {
    super(problem.message)
  }
}

/**
 * The tag a scalar resolved to: its explicit tag, or the first default tag whose test matches its
 * source, as the yaml package itself resolves plain scalars (the value alone cannot tell 3.0 from 3).
 */
function tagOf(node: Scalar, tags: Schema['tags']): string | undefined {
  if (node.tag) return node.tag
  const source = node.source
  if (typeof source !== 'string' || node.type !== 'PLAIN') return undefined
  return tags.find((t) => t.default === true && t.test?.test(source))?.tag
}

/**
 * Each alias's node: the last node with its anchor before it, as the yaml package's `resolve` finds
 * it, but in one walk of the document for all of them (`resolve` walks the document for each).
 */
function aliasTargets(doc: Document.Parsed): Map<Alias, unknown> {
  const anchors = new Map<string, unknown>()
  const targets = new Map<Alias, unknown>()
  visit(doc, {
    Node: (_key, node) => {
      if (isAlias(node)) targets.set(node, anchors.get(node.source))
      else if (node.anchor) anchors.set(node.anchor, node)
    },
  })
  return targets
}

/** Turns YAML source text into a positioned tree: YAML 1.1 scalars, first document only. */
export function parseTree(text: string, env: Record<string, string | undefined>): ParsedTree {
  // Before expanding, the router sets TMP, TEMP and TMPDIR to Go's os.TempDir(): $TMPDIR when set
  // and not empty, else /tmp (reference §1.3).
  const temp = env.TMPDIR ? env.TMPDIR : '/tmp'
  const goEnv = { ...env, TMPDIR: temp, TMP: temp, TEMP: temp }
  const errors: RawProblem[] = []
  const warnings: RawProblem[] = []
  const substituted = new Map<string, string>()
  const lines = new LineCounter()
  const docs = parseAllDocuments(text, {
    version: '1.1',
    uniqueKeys: false,
    lineCounter: lines,
    prettyErrors: false,
  })
  const docList = Array.isArray(docs) ? docs : []
  const at = (offset: number | undefined): Pos => {
    const p = lines.linePos(offset ?? 0)
    return { line: p.line, column: p.col }
  }
  const doc = docList[0]
  if (!doc) {
    errors.push({
      path: '',
      pos: { line: 1, column: 1 },
      message: 'the file is empty: a router configuration needs at least v, ctrl and identity',
    })
    return { root: undefined, errors, warnings }
  }
  if (docList.length > 1) {
    warnings.push({
      path: '',
      pos: at(docList[1]?.range[0]),
      message: 'only the first YAML document is read; the others are ignored',
    })
  }
  for (const e of doc.errors) {
    errors.push({
      path: '',
      pos: at(e.pos[0]),
      message: `YAML syntax: ${e.message.split('\n')[0]}`,
    })
  }
  if (doc.errors.length > 0) return { root: undefined, errors, warnings }

  // The checker expands aliases itself, so the yaml package's own limit does not apply: a few
  // hundred bytes of nested aliases ("billion laughs") would otherwise expand without bound.
  let nodes = 0
  let characters = 0
  /** The maps and lists being converted, outermost first: an alias of one of them is a loop. */
  const converting = new Set<unknown>()
  const looped = new Set<unknown>()
  const overBudget = (path: string, pos: Pos) =>
    new ExpansionLimit({
      path,
      pos,
      message: `the YAML expands to more than ${MAX_NODES} values or ${MAX_CHARACTERS} characters (an alias bomb?); nothing else was checked`,
    })
  /** `&a [*a]`: yaml.v2 refuses an anchor whose value holds an alias of itself. Said once. */
  const loop = (node: unknown, path: string, pos: Pos) => {
    if (looped.has(node)) return
    looped.add(node)
    const message = 'an alias inside the value of its own anchor (it contains itself)'
    errors.push({ path, pos, message })
  }
  const targets = aliasTargets(doc)
  const resolve = (alias: Alias) => targets.get(alias)
  const countCharacters = (n: number, path: string, pos: Pos) => {
    characters += n
    if (characters > MAX_CHARACTERS) throw overBudget(path, pos)
  }
  /**
   * Warns of an unset variable once per value and name, and of the first MAX_UNSET_WARNINGS only
   * (then once that there are more): a value read through many aliases, each naming many unset
   * variables, would otherwise make millions of warnings.
   */
  const warnedUnset = new Set<string>()
  const unsetVariable = (path: string, pos: Pos, name: string) => {
    if (warnedUnset.size > MAX_UNSET_WARNINGS) return
    const key = `${path}\0${name}`
    if (warnedUnset.has(key)) return
    warnedUnset.add(key)
    warnings.push(
      warnedUnset.size > MAX_UNSET_WARNINGS
        ? {
            path,
            pos,
            message: `more environment variables are not set; only the first ${MAX_UNSET_WARNINGS} are listed`,
          }
        : {
            path,
            pos,
            message: `environment variable ${name} is not set; it expands to an empty string`,
          },
    )
  }
  /** An alias resolved outside `convert` (a merge key's value); what it expands to is counted there. */
  const resolveMerged = (alias: Alias, path: string, pos: Pos): unknown => {
    const target = resolve(alias)
    if (target === undefined) {
      errors.push({ path, pos, message: `alias *${alias.source} names no anchor before it` })
    }
    return target
  }
  // Takes unknown: the yaml package types pair keys, values and items as unknown; its guards narrow.
  const convert = (node: unknown, path: string, fallback: Pos, depth: number): TNode => {
    const range = isNode(node) ? node.range : undefined
    const pos = range ? at(range[0]) : fallback
    // Counted first: what lies past the depth limit costs the budget too (an error each).
    if (++nodes > MAX_NODES) throw overBudget(path, pos)
    if (depth > 64) {
      errors.push({ path, pos, message: 'nesting deeper than 64 levels' })
      return { kind: 'scalar', pos, value: null, quoted: false }
    }
    if ((isMap(node) || isSeq(node)) && converting.has(node)) {
      loop(node, path, pos)
      return { kind: 'scalar', pos, value: null, quoted: false }
    }
    if (isAlias(node)) {
      const target = resolve(node)
      // The yaml package reads an alias of no anchor (or of one defined after it) as null; the
      // reference router's YAML library refuses the file.
      if (target === undefined) {
        errors.push({ path, pos, message: `alias *${node.source} names no anchor before it` })
        return { kind: 'scalar', pos, value: null, quoted: false }
      }
      return convert(target, path, pos, depth + 1)
    }
    if (isMap(node) || isSeq(node)) {
      converting.add(node)
      try {
        return convertCollection(node, path, pos, depth)
      } finally {
        converting.delete(node)
      }
    }
    return convertScalar(node, path, pos)
  }
  const convertCollection = (
    node: YAMLMap | YAMLSeq,
    path: string,
    pos: Pos,
    depth: number,
  ): TNode => {
    if (isMap(node)) {
      const entries = new Map<string, { keyPos: Pos; value: TNode }>()
      /** Where each key was written in this map itself (merged keys are not duplicates). */
      const written = new Map<string, Pos>()
      // In file order, as the reference router's YAML library (yaml.v2) reads a map: a `<<` merge
      // key sets its maps' keys where it stands, over any key before it, and a key after it wins.
      for (const pair of node.items) {
        const keyNode = pair.key
        const keyRange = isNode(keyNode) ? keyNode.range : undefined
        const keyPos = keyRange ? at(keyRange[0]) : pos
        if (isMergeKey(keyNode)) {
          // `<<: *a` or `<<: [*a, *b]`: each map's keys are this map's own, paths included; of
          // a list, the earlier map wins (yaml.v2 merges it last).
          const value = isAlias(pair.value) ? resolveMerged(pair.value, path, keyPos) : pair.value
          if (value === undefined) continue // an alias of no anchor: said already
          const sources = isSeq(value) ? [...value.items].reverse() : [value]
          for (const source of sources) {
            const merged = isAlias(source) ? resolve(source) : source
            if (converting.has(merged)) {
              loop(merged, path, keyPos) // not also a merge of something that is not a map
              continue
            }
            const tree = convert(source, path, keyPos, depth + 1)
            if (tree.kind === 'map')
              for (const [key, entry] of tree.entries) entries.set(key, entry)
            else {
              errors.push({
                path: path === '' ? '<<' : `${path}.<<`,
                pos: tree.pos,
                message: 'a << merge key takes a map, or a list of maps, to merge into this one',
              })
            }
          }
          continue
        }
        const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode)
        countCharacters(key.length, path, keyPos)
        const childPath = path === '' ? key : `${path}.${key}`
        const seen = written.get(key)
        if (seen) {
          warnings.push({
            path: childPath,
            pos: keyPos,
            message: `duplicate key "${key}" (lines ${seen.line} and ${keyPos.line}); the last one wins`,
          })
        }
        written.set(key, keyPos)
        entries.set(key, {
          keyPos,
          value: convert(pair.value, childPath, keyPos, depth + 1),
        })
      }
      return { kind: 'map', pos, entries }
    }
    return {
      kind: 'seq',
      pos,
      items: node.items.map((item, i) => convert(item, `${path}[${i}]`, pos, depth + 1)),
    }
  }
  const convertScalar = (node: unknown, path: string, pos: Pos): TNode => {
    if (isScalar(node)) {
      let value = node.value
      if (typeof value === 'bigint') value = Number(value)
      if (value instanceof Date) value = node.source ?? value.toISOString()
      // The yaml package leaves `!!float 3` a string (its 1.1 float forms need a dot); Go reads 3.0.
      if (node.tag === FLOAT_TAG && typeof value === 'string' && /^[-+]?[0-9][0-9_]*$/.test(value))
        value = Number(value.replaceAll('_', ''))
      if (!node.tag && node.type === 'PLAIN' && typeof node.source === 'string') {
        value = asYamlV2Reads(node.source, value)
      }
      let fromEnv = false
      if (typeof value === 'string') {
        const expanded = expandEnv(
          value,
          goEnv,
          (name) => unsetVariable(path, pos, name),
          (name, v) => substituted.set(v, name),
        )
        fromEnv = expanded !== value
        countCharacters(expanded.length, path, pos)
        value = expanded
      }
      const scalar =
        typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
          ? value
          : null
      const out: TNode = {
        kind: 'scalar',
        pos,
        value: scalar,
        quoted: node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE',
      }
      if (typeof scalar === 'number' && tagOf(node, doc.schema.tags) === FLOAT_TAG)
        out.float = node.source ?? String(scalar)
      if (fromEnv) out.fromEnv = true
      return out
    }
    return { kind: 'scalar', pos, value: null, quoted: false }
  }
  try {
    const root = convert(doc.contents, '', { line: 1, column: 1 }, 0)
    return { root, errors, warnings, substituted }
  } catch (err) {
    if (!(err instanceof ExpansionLimit)) throw err
    return { root: undefined, errors: [err.problem], warnings: [] }
  }
}
