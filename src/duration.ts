/** Nanoseconds of each unit Go's time.ParseDuration knows. */
const UNIT_NS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n,
  μs: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
}

const PART = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/y

/** Go's time.Duration: a signed 64-bit count of nanoseconds. */
const MAX_NS = 2n ** 63n - 1n

/** The longest duration Go holds, as Go writes it. */
export const GO_MAX_DURATION = '2562047h47m16.854775807s'

/** Why a text is not a Go duration: not its syntax, or longer than Go holds. */
export type DurationProblem = 'syntax' | 'overflow'

/** A Go duration's signed nanoseconds, or why the text is not one (see parseDuration). */
function durationNs(text: string): bigint | 'syntax' | { overflow: bigint } {
  let s = text
  let negative = false
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-')
    s = s.slice(1)
  }
  if (s === '0') return 0n
  if (s === '') return 'syntax'
  let total = 0n
  let overflow = false
  PART.lastIndex = 0
  while (PART.lastIndex < s.length) {
    const start = PART.lastIndex
    const m = PART.exec(s)
    if (!m || m.index !== start) return 'syntax'
    const [, whole = '', fraction, unitName = ''] = m
    const unit = UNIT_NS[unitName]
    // Go wants a digit on one side of the dot at least (`.5s` and `5.s`, not `.s`).
    if (unit === undefined || (whole === '' && !fraction)) return 'syntax'
    total += BigInt(whole || '0') * unit
    if (fraction) total += (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length)
    if (total > MAX_NS + (negative ? 1n : 0n)) overflow = true
  }
  if (overflow) return { overflow: negative ? -total : total }
  return negative ? -total : total
}

/**
 * Parses a Go duration string (`300ms`, `1.5h`, `1h30m`, `-2s`) into milliseconds, as Go's
 * time.ParseDuration does: in whole nanoseconds (a fraction of one is dropped), and undefined when
 * the text is not a Go duration or does not fit Go's 64-bit nanoseconds (GO_MAX_DURATION).
 * A bare `0` is accepted, as Go accepts it.
 */
export function parseDuration(
  text: string,
  /** `goLimit: false`: a duration past Go's limit is read all the same (the controller's own). */
  { goLimit = true }: { goLimit?: boolean } = {},
): number | undefined {
  const ns = durationNs(text)
  if (typeof ns === 'bigint') return Number(ns) / 1e6
  return ns !== 'syntax' && !goLimit ? Number(ns.overflow) / 1e6 : undefined
}

/** Why parseDuration refuses `text`, or undefined when it reads it. */
export function durationProblem(text: string): DurationProblem | undefined {
  const ns = durationNs(text)
  return typeof ns === 'bigint' ? undefined : ns === 'syntax' ? 'syntax' : 'overflow'
}

/** `n / unit` in decimal, without trailing zeros (`unit` a power of ten, `n` a whole number). */
function decimal(n: number, unit: number): string {
  const whole = Math.floor(n / unit)
  const fraction = n % unit
  if (fraction === 0) return String(whole)
  const digits = String(unit).length - 1
  return `${whole}.${String(fraction).padStart(digits, '0').replace(/0+$/, '')}`
}

/**
 * Formats milliseconds as a compact Go duration that Go's time.ParseDuration reads back to the same
 * nanoseconds below about 104 days, and within Go's limit always (`1h30m`, `250ms`, `1.5us`):
 * never in exponent notation.
 */
export function formatDuration(ms: number): string {
  if (ms < 0) return `-${formatDuration(-ms)}`
  const ns = Math.round(ms * 1e6)
  // Past 2^53 ns (about 104 days) a double holds no exact nanoseconds: the largest Go duration
  // may round up past itself, so it is written as itself.
  if (ns >= 2 ** 63) return GO_MAX_DURATION
  if (ns === 0) return '0s'
  if (ns < 1000) return `${ns}ns`
  if (ns < 1e6) return `${decimal(ns, 1000)}us`
  if (ns < 1e9) return `${decimal(ns, 1e6)}ms`
  const parts: string[] = []
  let rest = ns
  for (const [unit, size] of [
    ['h', 3.6e12],
    ['m', 6e10],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  if (rest > 0) parts.push(`${decimal(rest, 1e9)}s`)
  return parts.join('')
}
