import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'

/** The haproxy binary, or undefined where it is not installed. */
export function findHaproxy(): string | undefined {
  try {
    const path = execFileSync('sh', ['-c', 'command -v haproxy || ls /usr/sbin/haproxy'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
    return path === '' ? undefined : path
  } catch {
    return undefined
  }
}

/** A loopback port free at the moment of asking (the kernel picks it). */
export async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  await new Promise((r) => server.close(r))
  return port
}

/**
 * The configuration the README's deployment section shows: round robin, the readiness path as
 * health check, and retries (elsewhere) when a connection fails, or when an answer never comes to
 * a read (never to a write, which may have been stored: a restart that dropped one shows).
 */
export function haproxyConfig(frontendPort: number, backendPorts: number[]): string {
  return `global
  maxconn 1024

defaults
  mode http
  option forwardfor
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 10s
  option redispatch 1
  retries 3
  retry-on conn-failure empty-response response-timeout

frontend controllers
  bind 127.0.0.1:${frontendPort}
  default_backend controllers

backend controllers
  balance roundrobin
  option httpchk GET /health-checks/ready
  http-check expect status 200
  timeout check 1s
  default-server check inter 500ms fall 2 rise 1
  # An answer lost after the request reached an instance: only a read is sent again.
  http-request disable-l7-retry if !METH_GET !METH_HEAD !METH_OPTIONS
${backendPorts.map((port, i) => `  server ctrl-${i + 1} 127.0.0.1:${port}`).join('\n')}
`
}

export interface Haproxy {
  base: string
  child: ChildProcess
  stop: () => Promise<void>
}

/** Starts HAProxy in the foreground with that configuration; resolves once it accepts. */
export async function startHaproxy(bin: string, dir: string, backends: number[]): Promise<Haproxy> {
  const port = await freePort()
  const file = join(dir, 'haproxy.cfg')
  writeFileSync(file, haproxyConfig(port, backends))
  const child = spawn(bin, ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr?.on('data', (d) => {
    err += d
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`haproxy exited: ${err}`)
    const up = await fetch(`${base}/version`).then(
      (r) => r.ok,
      () => false,
    )
    if (up) break
    if (i > 200) throw new Error(`haproxy never answered: ${err}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    base,
    child,
    stop: async () => {
      if (child.exitCode !== null) return
      child.kill('SIGTERM')
      await once(child, 'exit')
    },
  }
}
