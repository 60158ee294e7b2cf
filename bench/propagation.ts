import { Client } from 'undici'
import { type Controller, startController } from './controller.js'

/** Changes made through A: 17 rounds of the six kinds below (at least 100, as the goal asks). */
const ROUNDS = Number(process.env.BENCH_PROPAGATION_ROUNDS ?? 17)
/** Signers listed throughout: with the moving one, never more than the default page (10). */
const STATIC_SIGNERS = 5
const GIVE_UP_MS = 5000
const CLIENT_LIST = '/edge/client/v1/external-jwt-signers'
const M = '/edge/management/v1/external-jwt-signers'

type Kind = 'create' | 'rename' | 'new externalAuthUrl' | 'disable' | 'enable' | 'delete'

/** The client list as the seed view shows it: each signer's name and externalAuthUrl. */
type View = Set<string>
const entry = (name: string, url: string) => `${name} ${url}`

function viewOf(body: string): View {
  const page = JSON.parse(body) as { data: { name: string; externalAuthUrl: string }[] }
  return new Set(page.data.map((s) => entry(s.name, s.externalAuthUrl)))
}

const same = (a: View, b: View) => a.size === b.size && [...a].every((e) => b.has(e))

export interface Propagation {
  kind: Kind
  /**
   * From A's answer to the write until B's client list showed the change, in ms; 0 when B showed
   * it before A's answer arrived.
   */
  fromAnswer: number
  /** From right before the write was sent to A. */
  fromSend: number
}

/**
 * B's client list, polled in a tight sequential loop over one keep-alive connection: `until`
 * resolves with the time the first answer showing `expected` arrived, or undefined after
 * GIVE_UP_MS.
 */
function poller(b: Controller) {
  const client = new Client(b.base, { pipelining: 1, keepAliveTimeout: 60_000 })
  const stats = { polls: 0, ms: 0 }
  const until = async (expected: View): Promise<number | undefined> => {
    const deadline = performance.now() + GIVE_UP_MS
    let stale: string | undefined
    for (;;) {
      const asked = performance.now()
      const res = await client.request({ path: CLIENT_LIST, method: 'GET' })
      const body = await res.body.text()
      const at = performance.now()
      stats.polls++
      stats.ms += at - asked
      if (res.statusCode !== 200)
        throw new Error(`bench: B's client list answered ${res.statusCode}`)
      if (body !== stale && same(viewOf(body), expected)) return at
      stale = body
      if (at > deadline) return undefined
    }
  }
  return { until, stats, close: () => client.close() }
}

/**
 * Two controller instances, A and B, on one PostgreSQL database (`db`, the bench's own): changes
 * made through A's management API, one at a time, each timed until B's unauthenticated client
 * list shows it. B is polled from right before each write is sent, so a change B shows before A
 * answers is seen too. Resolves with one figure per change; a change B never showed within
 * GIVE_UP_MS counts as GIVE_UP_MS.
 */
export async function benchPropagation(db: string): Promise<Propagation[]> {
  const a = await startController(db, { signers: STATIC_SIGNERS })
  const b = await startController(db)
  const poll = poller(b)
  try {
    const expected = viewOf(await (await fetch(`${a.base}${CLIENT_LIST}`)).text())
    if ((await poll.until(expected)) === undefined) throw new Error('bench: B never listed A')
    const session = await a.adminSession()
    const figures: Propagation[] = []
    /** One change: `expected` already shows it; resolves with A's answer. */
    const change = async (kind: Kind, method: string, path: string, body?: object) => {
      const sent = performance.now()
      const seen = poll.until(new Set(expected))
      const res = await fetch(`${a.base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'zt-session': session },
        ...(body ? { body: JSON.stringify(body) } : {}),
      })
      const answer = await res.text()
      const answered = performance.now()
      if (!res.ok) throw new Error(`bench: ${kind} answered ${res.status}: ${answer}`)
      const at = (await seen) ?? answered + GIVE_UP_MS
      figures.push({ kind, fromAnswer: Math.max(0, at - answered), fromSend: at - sent })
      return answer
    }
    for (let k = 0; k < ROUNDS; k++) {
      let name = `moving-${k}`
      let url = `https://moving-${k}.example/auth`
      const replace = (next: { name?: string; url?: string }) => {
        expected.delete(entry(name, url))
        name = next.name ?? name
        url = next.url ?? url
        expected.add(entry(name, url))
      }
      expected.add(entry(name, url))
      const created = await change('create', 'POST', M, {
        name,
        enabled: true,
        issuer: `https://moving-${k}.example`,
        audience: 'ziti',
        // Loopback port 1: the background key fetch is refused locally.
        jwksEndpoint: `http://127.0.0.1:1/moving-${k}`,
        externalAuthUrl: url,
      })
      const signer = `${M}/${(JSON.parse(created) as { data: { id: string } }).data.id}`
      replace({ name: `moving-${k}-renamed` })
      await change('rename', 'PATCH', signer, { name })
      replace({ url: `https://moving-${k}.example/auth-2` })
      await change('new externalAuthUrl', 'PATCH', signer, { externalAuthUrl: url })
      expected.delete(entry(name, url))
      await change('disable', 'PATCH', signer, { enabled: false })
      expected.add(entry(name, url))
      await change('enable', 'PATCH', signer, { enabled: true })
      expected.delete(entry(name, url))
      await change('delete', 'DELETE', signer)
    }
    report(figures, poll.stats)
    return figures
  } finally {
    await poll.close()
    await b.stop()
    await a.stop()
  }
}

/** The nearest-rank percentile `p` (0..1) of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN
}

function report(figures: Propagation[], polls: { polls: number; ms: number }): void {
  const line = (values: number[]) =>
    `p50 ${percentile(values, 0.5).toFixed(1)} ms  p99 ${percentile(values, 0.99).toFixed(1)} ms  max ${Math.max(...values).toFixed(1)} ms`
  const first = figures.filter((f) => f.fromAnswer === 0).length
  const missed = figures.filter((f) => f.fromAnswer >= GIVE_UP_MS).length
  console.log(
    `\npropagation A -> B (PostgreSQL, two instances on one database): ${figures.length} changes through A (${ROUNDS} each of create, rename, new externalAuthUrl, disable, enable, delete), each until B's unauthenticated client list showed it; B polled from right before each write, in a sequential loop over one keep-alive connection (${polls.polls} polls, ${(polls.ms / polls.polls).toFixed(2)} ms each on average: the resolution)`,
  )
  console.log(
    `  reported: from A's answer to the write:  ${line(figures.map((f) => f.fromAnswer))}  (${first} shown by B before A's answer arrived, counted 0)`,
  )
  console.log(`  also: from before the write was sent:  ${line(figures.map((f) => f.fromSend))}`)
  const kinds = [...new Set(figures.map((f) => f.kind))]
  console.log(
    `  by kind, from A's answer (p50 / max): ${kinds
      .map((kind) => {
        const values = figures.filter((f) => f.kind === kind).map((f) => f.fromAnswer)
        return `${kind} ${percentile(values, 0.5).toFixed(1)} / ${Math.max(...values).toFixed(1)} ms`
      })
      .join(', ')}`,
  )
  if (missed > 0) console.log(`  NOT shown by B within ${GIVE_UP_MS} ms: ${missed} changes`)
}
