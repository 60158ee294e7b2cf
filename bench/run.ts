import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { buildApp } from '../src/app.js'
import { DEFAULT_CONFIG } from '../src/config.js'

const DURATION_S = Number(process.env.BENCH_DURATION ?? 5)
const CONNECTIONS = 20
const PASSWORD = 'bench-admin-password'

async function measure(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ rps: number; p99: number; errors: number }> {
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION_S })
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  }
}

function report(name: string, r: { rps: number; p99: number; errors: number }, baseline: number) {
  const ratio = (r.rps / baseline).toFixed(2)
  console.log(
    `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99).padStart(3)} ms  errors ${r.errors}  ratio ${ratio}`,
  )
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-'))
  const bare = Fastify({ logger: false })
  bare.get('/hello', async () => ({ data: [], meta: {} }))
  await bare.listen({ host: '127.0.0.1', port: 0 })
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}` // listen on a TCP port

  const app = await buildApp({
    config: { ...DEFAULT_CONFIG, dbPath: join(dir, 'bench.db'), adminPassword: PASSWORD },
    logger: false,
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}` // listen on a TCP port
  const login = await fetch(`${base}/edge/management/v1/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  const token = login.headers.get('zt-session') as string
  for (let i = 0; i < 100; i++) {
    await fetch(`${base}/edge/management/v1/external-jwt-signers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'zt-session': token },
      body: JSON.stringify({
        name: `signer-${i}`,
        enabled: true,
        issuer: `https://idp-${i}.example`,
        audience: 'ziti',
        jwksEndpoint: `https://idp-${i}.example/jwks`,
        externalAuthUrl: `https://idp-${i}.example/auth`,
      }),
    })
  }

  console.log(`autocannon: ${CONNECTIONS} connections, ${DURATION_S} s per route, loopback`)
  const baseline = await measure(`${bareUrl}/hello`)
  report('bare Fastify route (baseline)', baseline, baseline.rps)
  report(
    'client signer list (100 signers, limit 10)',
    await measure(`${base}/edge/client/v1/external-jwt-signers`),
    baseline.rps,
  )
  report(
    'management signer list (limit 10)',
    await measure(`${base}/edge/management/v1/external-jwt-signers`, { 'zt-session': token }),
    baseline.rps,
  )
  report(
    'management list, filter + sort',
    await measure(
      `${base}/edge/management/v1/external-jwt-signers?filter=${encodeURIComponent('name contains "signer-4" and enabled = true')}&sort=name%20desc`,
      { 'zt-session': token },
    ),
    baseline.rps,
  )

  await app.close()
  await bare.close()
  rmSync(dir, { recursive: true, force: true })
}

await main()
