import autocannon from 'autocannon'

export const DURATION_S = Number(process.env.BENCH_DURATION ?? 5)
export const CONNECTIONS = 20

export interface Result {
  rps: number
  p99: number
  errors: number
}

/** Runs autocannon against one route; `headers` may rotate per request. */
export async function measure(
  url: string,
  options: { method?: 'GET' | 'POST'; headers?: () => Record<string, string> } = {},
): Promise<Result> {
  const nextHeaders = options.headers
  const result = await autocannon({
    url,
    method: options.method ?? 'GET',
    connections: CONNECTIONS,
    duration: DURATION_S,
    ...(nextHeaders
      ? { requests: [{ setupRequest: (req: object) => ({ ...req, headers: nextHeaders() }) }] }
      : {}),
  })
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  }
}

/** Calls `fn` in a loop for the benchmark duration and returns calls per second. */
export async function loop(fn: () => Promise<unknown>): Promise<number> {
  const end = performance.now() + DURATION_S * 1000
  let n = 0
  while (performance.now() < end) {
    await fn()
    n++
  }
  return n / DURATION_S
}

export function report(name: string, r: Result, baseline: number, baselineName: string): void {
  console.log(
    `${name.padEnd(46)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99).padStart(3)} ms  errors ${r.errors}  ratio ${(r.rps / baseline).toFixed(2)} of ${baselineName}`,
  )
}
