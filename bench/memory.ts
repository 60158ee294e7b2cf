import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import { CONNECTIONS } from './common.js'
import type { Controller } from './controller.js'
import type { LoginFixture } from './login.js'

const TOTAL = Number(process.env.BENCH_MEMORY_REQUESTS ?? 1_000_000)
const CHUNK = 50_000

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kb / 1024
}

/**
 * One million mixed requests (a quarter each: logins with distinct tokens, the client list, refused
 * tokens, unknown URLs) in chunks; the controller's resident memory is read after every chunk.
 */
export async function benchMemory(ctrl: Controller, fixture: LoginFixture): Promise<void> {
  if (TOTAL <= 0) return
  const logins = Math.ceil(TOTAL / 4)
  console.log(`\nmemory: ${TOTAL} mixed requests (signing ${logins} distinct ES256 tokens first)`)
  const tokens = await fixture.tokens('ES256', logins)
  let t = 0
  let bad = 0
  let miss = 0
  const start = rssMb(ctrl.pid)
  let peak = start
  const samples: { sent: number; rss: number }[] = [{ sent: 0, rss: start }]
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(ctrl.pid))
  }, 250)
  for (let sent = 0; sent < TOTAL; sent += CHUNK) {
    await autocannon({
      url: ctrl.base,
      connections: CONNECTIONS,
      amount: Math.min(CHUNK, TOTAL - sent),
      requests: [
        {
          method: 'POST',
          path: '/edge/client/v1/authenticate?method=ext-jwt',
          setupRequest: (req: object) => ({
            ...req,
            headers: { authorization: `Bearer ${tokens[t++ % tokens.length]}` },
          }),
        },
        { method: 'GET', path: '/edge/client/v1/external-jwt-signers' },
        {
          method: 'POST',
          path: '/edge/client/v1/authenticate?method=ext-jwt',
          setupRequest: (req: object) => ({
            ...req,
            headers: { authorization: `Bearer eyJhbGciOiJSUzI1NiJ9.eyJiYWQiOiR${bad++}In0.c2ln` },
          }),
        },
        {
          method: 'GET',
          setupRequest: (req: object) => ({ ...req, path: `/no/such/route/${miss++}` }),
        },
      ],
    })
    const rss = rssMb(ctrl.pid)
    peak = Math.max(peak, rss)
    samples.push({ sent: Math.min(sent + CHUNK, TOTAL), rss })
  }
  clearInterval(sampler)
  const end = samples[samples.length - 1]?.rss ?? start
  const before = [...samples].reverse().find((s) => s.sent <= TOTAL - 200_000) ?? samples[0]
  console.log(
    `RSS at start ${start.toFixed(1)} MB, at the end ${end.toFixed(1)} MB, peak ${peak.toFixed(1)} MB; ` +
      `last 200,000 requests: ${(end - (before?.rss ?? start)).toFixed(1)} MB (goal: end <= 150 MB, flat)`,
  )
  console.log(`  samples: ${samples.map((s) => `${s.sent / 1000}k:${s.rss.toFixed(0)}`).join(' ')}`)
}
