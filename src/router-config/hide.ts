/** Substituted values at least this long are hidden in what the checker prints. */
export const MIN_HIDDEN_LENGTH = 8
/** A run of this many characters of a hidden value is hidden in a quoted part of a message. */
const MIN_PART = 4
/** The places of a run's first characters that are tried, at most, for each run. */
const MAX_PLACES = 32

interface Form {
  text: string
  name: string
}

/** How values from the environment are hidden: whole in any text, in pieces in a message. */
export interface Hider {
  /** A value or a key of the printed configuration: every whole value as `${NAME}`. */
  whole(text: string): string
  /** A message: whole values, and pieces of them in its quoted parts. */
  message(text: string): string
}

/** A double-quoted part of a message, as messages quote values (JSON escapes included). */
const QUOTED = /"((?:[^"\\]|\\.)*)"/g

/**
 * Hides each value the file took from the environment, when it is long enough to be a credential:
 * a check run in CI on a file it does not trust must not print the runner's secrets (`endpoint:
 * $AWS_SECRET_ACCESS_KEY` quoted in an error, or copied into an ignored key of the printed
 * configuration). A value is hidden as it is and as a JSON string shows it. Messages also quote
 * pieces of values (the port of an address, an escape of a path, the start of a long value): in a
 * quoted part of a message, any run of MIN_PART characters of a hidden value, or a quoted piece of
 * 3 that one holds, reads `(part of ${NAME})`. Only quoted parts, so that the wording of a message
 * stays whole when a value shares a word with it (`router` in `router1.example.com`).
 * Undefined when nothing is to be hidden.
 */
export function substitutedHider(substituted: Map<string, string> | undefined): Hider | undefined {
  const forms: Form[] = []
  for (const [value, name] of substituted ?? []) {
    if (value.length < MIN_HIDDEN_LENGTH) continue
    forms.push({ text: value, name })
    const json = JSON.stringify(value).slice(1, -1)
    if (json !== value) forms.push({ text: json, name })
  }
  if (forms.length === 0) return undefined
  // The longest first, so that a value holding another is hidden whole.
  const longestFirst = [...forms].sort((x, y) => y.text.length - x.text.length)
  const whole = (text: string) =>
    longestFirst.reduce((t, f) => t.replaceAll(f.text, `\${${f.name}}`), text)
  // Where each run of MIN_PART characters starts in the forms, so a text is read once.
  const places = new Map<string, [Form, number][]>()
  for (const form of forms) {
    for (let at = 0; at + MIN_PART <= form.text.length; at++) {
      const run = form.text.slice(at, at + MIN_PART)
      const list = places.get(run) ?? []
      if (list.length < MAX_PLACES) list.push([form, at])
      places.set(run, list)
    }
  }
  const pieces = (text: string) => {
    if (text.length === 3) {
      const form = forms.find((f) => f.text.includes(text))
      return form ? `(part of \${${form.name}})` : text
    }
    let out = ''
    let from = 0
    let i = 0
    while (i + MIN_PART <= text.length) {
      const list = places.get(text.slice(i, i + MIN_PART))
      if (!list) {
        i++
        continue
      }
      // The longest match here.
      let best = { length: 0, name: '' }
      for (const [form, at] of list) {
        let k = MIN_PART
        while (at + k < form.text.length && form.text[at + k] === text[i + k]) k++
        if (k > best.length) best = { length: k, name: form.name }
      }
      out += `${text.slice(from, i)}(part of \${${best.name}})`
      i += best.length
      from = i
    }
    return out + text.slice(from)
  }
  return {
    whole,
    message: (text) => whole(text).replace(QUOTED, (_all, inner: string) => `"${pieces(inner)}"`),
  }
}

/** Every string of a configuration (values and keys) through `hide`. */
export function hideIn(value: unknown, hide: (text: string) => string): unknown {
  if (typeof value === 'string') return hide(value)
  if (Array.isArray(value)) return value.map((v) => hideIn(v, hide))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [hide(k), hideIn(v, hide)]))
  }
  return value
}
