import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONNECTIONS, DURATION_S, measure, report } from './common.js'
import { benchLists100k } from './lists-100k.js'
import { benchLogin } from './login.js'
import { benchMetrics } from './metrics.js'
import { freePort, startProcess } from './processes.js'
import { benchSecondary } from './secondary.js'

const PASSWORD = 'bench-admin-password'

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-'))
  const here = dirname(fileURLToPath(import.meta.url))
  const [barePort, port] = [await freePort(), await freePort()]
  const bareUrl = `http://127.0.0.1:${barePort}`
  const bare = await startProcess(join(here, 'bare-server.js'), bareUrl, '/hello', {
    PORT: String(barePort),
  })
  // The controller runs as `npm start` runs it, in its own process; warn-level logs, so the figures
  // measure the service rather than the access log.
  const base = `http://127.0.0.1:${port}`
  const app = await startProcess(join(here, '../src/server.js'), base, '/health-checks', {
    CTRL_PORT: String(port),
    CTRL_DB: join(dir, 'bench.db'),
    CTRL_ADMIN_PASSWORD: PASSWORD,
    CTRL_LOG_LEVEL: 'warn',
  })
  const login = await fetch(`${base}/edge/management/v1/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  const token = login.headers.get('zt-session') as string
  const call = (method: string, url: string, body?: unknown) =>
    fetch(`${base}${url}`, {
      method,
      headers: { 'content-type': 'application/json', 'zt-session': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  for (let i = 0; i < 100; i++) {
    await call('POST', '/edge/management/v1/external-jwt-signers', {
      name: `signer-${i}`,
      enabled: true,
      issuer: `https://idp-${i}.example`,
      audience: 'ziti',
      // Loopback port 1: the background key fetch is refused locally, nothing leaves the machine.
      jwksEndpoint: `http://127.0.0.1:1/jwks-${i}`,
      externalAuthUrl: `https://idp-${i}.example/auth`,
    })
  }

  console.log(
    `autocannon: ${CONNECTIONS} connections, ${DURATION_S} s per route, loopback; servers in their own processes`,
  )
  const baseline = await measure(`${bareUrl}/hello`)
  report('bare Fastify route (baseline)', baseline, baseline.rps, 'bare')
  const admin = () => ({ 'zt-session': token })
  report(
    'client signer list (100 signers)',
    await measure(`${base}/edge/client/v1/external-jwt-signers`),
    baseline.rps,
    'bare',
  )
  report(
    'management signer list (limit 10)',
    await measure(`${base}/edge/management/v1/external-jwt-signers`, { headers: admin }),
    baseline.rps,
    'bare',
  )
  const filter = encodeURIComponent('name contains "signer-4" and enabled = true')
  report(
    'management list, filter + sort',
    await measure(
      `${base}/edge/management/v1/external-jwt-signers?filter=${filter}&sort=name%20desc`,
      { headers: admin },
    ),
    baseline.rps,
    'bare',
  )
  await benchLogin(base, call)
  await benchSecondary(base, call)
  await benchLists100k()
  await benchMetrics(join(here, '../src/server.js'), dir)

  await app.stop()
  await bare.stop()
  rmSync(dir, { recursive: true, force: true })
}

await main()
