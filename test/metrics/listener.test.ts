import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, expect, it, onTestFinished } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'
import { parseExposition } from './scrape.js'

const root = new URL('../../', import.meta.url).pathname

/** Starts the server from source as `npm run dev` does; resolves once it logged where it listens. */
async function start(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      CTRL_PORT: '0',
      CTRL_DB: ':memory:',
      CTRL_ADMIN_PASSWORD: 'metrics-admin-password',
      CTRL_SHUTDOWN_DELAY: '0s',
      ...env,
    },
  })
  onTestFinished(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
  let out = ''
  const api = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start: ${out}`)), 20_000)
    child.stdout?.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1] as string)
      }
    })
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)))
  })
  // The metrics line follows the listening line at once when the listener is on.
  await new Promise((r) => setTimeout(r, 200))
  return { api, output: () => out }
}

describe('the metrics listener of the server', () => {
  it('is off by default: no listener, and the API port serves no metrics', async () => {
    const s = await start({})
    expect(s.output()).not.toContain('metrics on')
    const res = await fetch(`${s.api}/metrics`)
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND')
  }, 30_000)

  it('with CTRL_METRICS_PORT=0 listens on a free port of its own, logged, apart from the API', async () => {
    const s = await start({ CTRL_METRICS_PORT: '0' })
    const url = /metrics on (http:\/\/127\.0\.0\.1:(\d+)\/metrics)/.exec(s.output())
    expect(url).not.toBeNull()
    const [, metricsUrl, port] = url as RegExpExecArray
    expect(port).not.toBe(new URL(s.api).port)
    expect((await fetch(`${s.api}/health-checks`)).status).toBe(200)
    expect((await fetch(`${s.api}/metrics`)).status).toBe(404)
    const res = await fetch(metricsUrl as string)
    expect(res.status).toBe(200)
    const samples = parseExposition(await res.text())
    const health = samples.find(
      (x) => x.name === 'ctrl_http_requests_total' && x.labels.route === '/health-checks',
    )
    expect(health?.value).toBe(1)
    expect(samples.some((x) => x.name === 'process_resident_memory_bytes')).toBe(true)
  }, 30_000)
})

describe('CTRL_METRICS_PORT and CTRL_METRICS_HOST', () => {
  it('default to off and 127.0.0.1; take a port from 0 to 65535 that is not the API port', () => {
    expect(loadConfig({})).toMatchObject({ metricsPort: undefined, metricsHost: '127.0.0.1' })
    expect(loadConfig({ CTRL_METRICS_PORT: '0' }).metricsPort).toBe(0)
    expect(loadConfig({ CTRL_METRICS_PORT: '9464', CTRL_METRICS_HOST: '0.0.0.0' })).toMatchObject({
      metricsPort: 9464,
      metricsHost: '0.0.0.0',
    })
    for (const bad of ['-1', '65536', 'abc', '1.5'])
      expect(() => loadConfig({ CTRL_METRICS_PORT: bad })).toThrow(ConfigError)
    expect(() => loadConfig({ CTRL_METRICS_PORT: '1280' })).toThrow(/CTRL_METRICS_PORT/)
  })
})
