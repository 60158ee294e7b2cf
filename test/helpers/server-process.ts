import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'

const root = new URL('../../', import.meta.url).pathname

export interface Started {
  child: ChildProcess
  base: string
  stdout: () => string
  stderr: () => string
}

/**
 * Starts the built server as `npm start` does (dist is built by the global setup) and waits for
 * its "listening on" line. Without CTRL_SHUTDOWN_DELAY in `env`, SIGTERM stops it at once (no
 * balancer needs the readiness delay in these tests).
 */
export async function startServer(
  env: Record<string, string>,
  timeoutMs = 20_000,
): Promise<Started> {
  const child = spawn(process.execPath, ['dist/src/server.js'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', CTRL_PORT: '0', CTRL_SHUTDOWN_DELAY: '0s', ...env },
  })
  let out = ''
  let err = ''
  child.stderr?.on('data', (d) => {
    err += d
  })
  child.stdout?.on('data', (d) => {
    out += d
  })
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line: ${out} ${err}`)), timeoutMs)
    const check = () => {
      const m = /listening on (https?:\/\/[\d.]+:\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1] as string)
      }
    }
    child.stdout?.on('data', check)
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)))
  })
  return { child, base, stdout: () => out, stderr: () => err }
}

/** Stops a server with SIGTERM and resolves with its exit code. */
export async function stopServer(s: Started): Promise<number | null> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return s.child.exitCode
  s.child.kill('SIGTERM')
  const [code] = await once(s.child, 'exit')
  return code as number | null
}

/** Runs the built server expecting it to exit; resolves with its code, stderr and duration. */
export async function runToExit(
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now()
  const child = spawn(process.execPath, ['dist/src/server.js'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', CTRL_PORT: '0', ...env },
  })
  let err = ''
  child.stderr?.on('data', (d) => {
    err += d
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const [code] = await once(child, 'exit')
  clearTimeout(timer)
  return { code: code as number | null, stderr: err, ms: Date.now() - started }
}
