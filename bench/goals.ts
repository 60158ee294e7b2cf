import type { Paired } from './common.js'

/** The summary printed at the end of a run: one line per goal, with whether it was met. */
export class Goals {
  private readonly lines: string[] = []

  /**
   * A ratio goal. On the median (the default) the goal is met when the median round is at or above
   * `target`; on the lowest, only when every round is. Both figures are printed either way.
   */
  ratio(name: string, p: Paired, target: number, on: 'median' | 'lowest' = 'median'): void {
    const met = p[on] >= target
    this.lines.push(
      `${name.padEnd(58)} median ${p.median.toFixed(2)}  lowest ${p.lowest.toFixed(2)}  (goal ${target} on the ${on}) ${met ? 'met' : 'NOT met'}`,
    )
  }

  /** A goal of at most `limit` (a latency). */
  atMost(name: string, value: number, limit: number, unit: string): void {
    this.lines.push(
      `${name.padEnd(58)} ${value.toFixed(1)} ${unit}  (goal <= ${limit} ${unit}) ${value <= limit ? 'met' : 'NOT met'}`,
    )
  }

  /** A figure without a goal. */
  note(line: string): void {
    this.lines.push(line)
  }

  print(): void {
    console.log('\nsummary (figures of this run):')
    for (const line of this.lines) console.log(`  ${line}`)
  }
}
