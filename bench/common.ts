import { existsSync, readFileSync } from 'node:fs'
import autocannon from 'autocannon'

export const DURATION_S = Number(process.env.BENCH_DURATION ?? 5)
export const CONNECTIONS = 32
/** Seconds of the same load before each measured run (V8 needs a few to optimise a route's path). */
export const WARMUP_S = Number(process.env.BENCH_WARMUP ?? 3)
/** Rounds of each goal's baseline and target, measured in turns (see `paired`). */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)

export interface Result {
  rps: number
  p99: number
  errors: number
  requests: number
  /** CPU time (user and system, every thread) the server process spent per request, in µs. */
  cpuUs?: number
}

/**
 * A process's CPU time so far in µs, or one of its threads' with `tid` (the main thread's is the
 * process id) (Linux /proc; undefined elsewhere, or once it ended).
 */
export function cpuTimeUs(pid: number, tid?: number): number | undefined {
  const path = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`
  try {
    const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) * 10_000 // clock ticks of 10 ms
  } catch {
    return undefined
  }
}

/** Whether this kernel keeps run-queue figures per process (/proc/<pid>/schedstat). */
export const SCHEDSTAT = existsSync('/proc/self/schedstat')

/**
 * How long a single-threaded process (a PostgreSQL backend) has so far been ready to run but waited
 * for a CPU, in µs: the second field of /proc/<pid>/schedstat, its main thread's (Linux). Undefined
 * when it cannot be read (the process ended, or no such file) or the kernel keeps no figures there
 * (a process that has run with no time on a CPU counted).
 */
export function runQueueWaitUs(pid: number): number | undefined {
  try {
    const [ran, waited] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number)
    return ran !== undefined && ran > 0 && waited !== undefined && Number.isFinite(waited)
      ? waited / 1000
      : undefined
  } catch {
    return undefined
  }
}

/**
 * What autocannon sends as headers: a constant record (the request is then built once, as a client
 * that repeats itself does), or a function called per request, to rotate them (autocannon then
 * rebuilds every request, which costs the load generator, on the same cores, CPU of its own).
 */
function headerOptions(
  headers: Record<string, string> | (() => Record<string, string>) | undefined,
): object {
  if (headers === undefined) return {}
  if (typeof headers !== 'function') return { headers }
  return { requests: [{ setupRequest: (req: object) => ({ ...req, headers: headers() }) }] }
}

/**
 * Runs autocannon against one route; `headers` are constant or rotate per request. With `amount`
 * the run ends after that many requests (a list of distinct tokens is then never sent twice:
 * autocannon's own request list would start again on every connection, so the rotation is one
 * shared counter).
 */
export async function measure(
  url: string,
  options: {
    method?: 'GET' | 'POST'
    headers?: Record<string, string> | (() => Record<string, string>)
    amount?: number
    statusOk?: (status: number) => boolean
    /** The server's process id: its CPU time per request is reported too. */
    pid?: number
    /** With `pid`: only this thread's CPU time (the event loop's is `pid`'s own id). */
    tid?: number
    /** Warm the route up first (default: yes, for a run of a duration). */
    warmup?: boolean
    /** Called after the warm-up, right before the measured run starts. */
    beforeRun?: () => Promise<void>
    /**
     * A run of this many seconds instead of DURATION_S (a slice of a round, see `paired`): its rate
     * is then its requests over its own duration, not autocannon's average of whole seconds.
     */
    seconds?: number
    /** Requests a second in all, at most (autocannon's overallRate): a load below saturation. */
    rate?: number
  } = {},
): Promise<Result> {
  if (options.amount === undefined && options.warmup !== false) {
    // The same load first, so every figure is of a warmed-up process (JIT, caches).
    await autocannon({
      url,
      method: options.method ?? 'GET',
      connections: CONNECTIONS,
      duration: WARMUP_S,
      ...headerOptions(options.headers),
    })
  }
  await options.beforeRun?.()
  const cpuBefore = options.pid === undefined ? undefined : cpuTimeUs(options.pid, options.tid)
  const started = performance.now()
  let lastResponse = started
  let ended = started
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url,
        method: options.method ?? 'GET',
        connections: CONNECTIONS,
        ...(options.amount === undefined
          ? { duration: options.seconds ?? DURATION_S }
          : { amount: options.amount }),
        ...(options.rate === undefined ? {} : { overallRate: options.rate }),
        ...headerOptions(options.headers),
      },
      (err, res) => {
        ended = performance.now()
        return err ? reject(err) : resolve(res)
      },
    )
    run.on('response', () => {
      lastResponse = performance.now()
    })
  })
  // autocannon ends a run of a fixed amount on its next whole-second tick: time it to the last
  // response instead.
  const seconds = (lastResponse - started) / 1000
  const total = result.requests.total
  const cpuAfter = options.pid === undefined ? undefined : cpuTimeUs(options.pid, options.tid)
  const cpu =
    cpuBefore === undefined || cpuAfter === undefined
      ? {}
      : { cpuUs: (cpuAfter - cpuBefore) / total }
  return {
    ...cpu,
    rps:
      options.amount !== undefined
        ? total / seconds
        : options.seconds !== undefined
          ? total / ((ended - started) / 1000)
          : result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + (options.statusOk ? 0 : result.non2xx),
    requests: total,
  }
}

/** Calls `fn` in a loop for the benchmark duration (or over `items` once) and returns calls/s. */
export async function loop(fn: () => Promise<unknown>, count?: number): Promise<number> {
  const start = performance.now()
  const end = start + DURATION_S * 1000
  let n = 0
  while (count === undefined ? performance.now() < end : n < count) {
    await fn()
    n++
  }
  return n / ((performance.now() - start) / 1000)
}

export function report(name: string, r: Result, baseline: number, baselineName: string): number {
  const ratio = r.rps / baseline
  const cpu = r.cpuUs === undefined ? '' : `  cpu ${r.cpuUs.toFixed(0).padStart(3)} µs/req`
  console.log(
    `${name.padEnd(50)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99).padStart(3)} ms  errors ${r.errors}${cpu}  ratio ${ratio.toFixed(2)} of ${baselineName}`,
  )
  return ratio
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/** A goal's figures over the rounds of `paired`. */
export interface Paired {
  /** The median of the rounds' ratios: the figure of most goals. */
  median: number
  /** The lowest round's ratio: the figure of goals that must hold in every round. */
  lowest: number
}

/**
 * How many slices a round of a goal that must hold in every round is cut into (`paired`'s
 * `slices`; `BENCH_SLICES`).
 */
export const SLICES = Number(process.env.BENCH_SLICES ?? 6)

/** One round's slices as one result: their requests over their time, CPU per request. */
function combined(slices: Result[]): Result {
  if (slices.length === 1) return slices[0] as Result
  const requests = slices.reduce((n, r) => n + r.requests, 0)
  const seconds = slices.reduce((n, r) => n + r.requests / r.rps, 0)
  const cpu = slices.every((r) => r.cpuUs !== undefined)
    ? { cpuUs: slices.reduce((n, r) => n + (r.cpuUs as number) * r.requests, 0) / requests }
    : {}
  return {
    ...cpu,
    rps: requests / seconds,
    p99: Math.max(...slices.map((r) => r.p99)),
    errors: slices.reduce((n, r) => n + r.errors, 0),
    requests,
  }
}

/**
 * A goal's ratio on a shared, noisy machine: the baseline and the target are measured in turns,
 * ROUNDS times, each round's target against that round's baseline; the median and the lowest of
 * the rounds' ratios are the figures (every round's ratio is printed too). `round` is the round's
 * index (0 warms up: later rounds may skip it).
 *
 * With `slices` above 1, a round is that many short turns of baseline and target (each a slice of
 * the round's duration or tokens: `slice` is its index), summed into the round's two rates. A
 * goal that must hold in every round is judged on its lowest round; this machine's speed swings
 * by a quarter within seconds, so one run of each side per round let a swing during one of them
 * decide that figure (rounds of 0.64 beside 1.03 in one run). Turns of a second each put any
 * swing of a few seconds on both sides alike.
 *
 * The two sides take turns in alternating order (baseline first, then target first, and so on
 * from turn to turn, across rounds too), as the metrics block does (off, on, on, off): whichever
 * runs second inherits what the first left behind (its garbage for the collector, in the server
 * and in the load generator; its connections closing), and with a fixed order that went to the
 * target every time. `prepare` runs before each turn's two sides (signing both sides' tokens, say),
 * so that they follow each other at once whichever goes first.
 */
export async function paired(
  name: string,
  baselineName: string,
  baseline: (round: number, slice: number) => Promise<Result>,
  target: (round: number, slice: number) => Promise<Result>,
  slices = 1,
  prepare?: (round: number, slice: number) => Promise<void>,
): Promise<Paired> {
  const ratios: number[] = []
  const targets: Result[] = []
  const baselines: Result[] = []
  let turn = 0
  for (let round = 0; round < ROUNDS; round++) {
    const bs: Result[] = []
    const ts: Result[] = []
    for (let slice = 0; slice < slices; slice++) {
      await prepare?.(round, slice)
      if (turn++ % 2 === 0) {
        bs.push(await baseline(round, slice))
        ts.push(await target(round, slice))
      } else {
        ts.push(await target(round, slice))
        bs.push(await baseline(round, slice))
      }
    }
    const b = combined(bs)
    const t = combined(ts)
    baselines.push(b)
    targets.push(t)
    ratios.push(t.rps / b.rps)
  }
  const ratio = median(ratios)
  const lowest = Math.min(...ratios)
  const cpu = (rs: Result[]) =>
    rs.every((r) => r.cpuUs !== undefined)
      ? `  cpu ${median(rs.map((r) => r.cpuUs as number)).toFixed(0)} µs/req`
      : ''
  console.log(
    `${name.padEnd(50)} ${median(targets.map((r) => r.rps))
      .toFixed(0)
      .padStart(
        7,
      )} req/s  p99 ${String(median(targets.map((r) => r.p99))).padStart(3)} ms  errors ${targets.reduce((n, r) => n + r.errors, 0)}${cpu(targets)}  ratio ${ratio.toFixed(2)} (lowest ${lowest.toFixed(2)}) of ${baselineName} (${median(baselines.map((r) => r.rps)).toFixed(0)}${cpu(baselines)}; rounds ${ratios.map((r) => r.toFixed(2)).join(' ')})`,
  )
  return { median: ratio, lowest }
}
