const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y

/**
 * Parses a Go duration string (`300ms`, `1.5h`, `1h30m`, `-2s`) into milliseconds.
 * Returns undefined when the text is not a Go duration. A bare `0` is accepted, as Go accepts it.
 */
export function parseDuration(text: string): number | undefined {
  let s = text
  let sign = 1
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s.startsWith('-')) sign = -1
    s = s.slice(1)
  }
  if (s === '0') return 0
  if (s === '') return undefined
  let total = 0
  PART.lastIndex = 0
  while (PART.lastIndex < s.length) {
    const start = PART.lastIndex
    const m = PART.exec(s)
    if (!m || m.index !== start) return undefined
    const unit = UNIT_MS[m[2] ?? '']
    if (unit === undefined) return undefined
    total += Number(m[1]) * unit
  }
  return sign * total
}

/** Formats milliseconds as a compact Go-style duration (`1h30m`, `250ms`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s'
  if (ms < 1000) return `${ms}ms`
  const parts: string[] = []
  let rest = ms
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  if (rest > 0) parts.push(`${rest / 1000}s`)
  return parts.join('')
}
