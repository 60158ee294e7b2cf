import { type ChildProcess, fork, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

export interface Started {
  stop: () => Promise<void>
  pid: number
}

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo // TCP listener
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Starts a built script as its own process and waits until `base + probe` answers 200. */
export async function startProcess(
  script: string,
  base: string,
  probe: string,
  env: Record<string, string> = {},
  /** Node options the script is started with (the controller: those of `npm start`). */
  flags: string[] = [],
): Promise<Started> {
  // BENCH_NODE_ARGS (for example `--cpu-prof --cpu-prof-dir=prof`) profiles the servers under load.
  const nodeArgs = [...flags, ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)]
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  let exited = false
  child.on('exit', () => {
    exited = true
  })
  for (let i = 0; ; i++) {
    if (exited || i > 200) throw new Error(`${script} did not start`)
    const ok = await fetch(`${base}${probe}`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    pid: child.pid as number, // spawned and answering
    stop: async () => {
      child.kill('SIGTERM')
      await once(child, 'exit')
    },
  }
}

/**
 * The Node option of every bare Fastify server (the baselines and the page ceiling), as of the
 * controller (`npm start`): without it a server left idle some seconds after it starts (the
 * ceiling waits while its baseline runs first) stays about a quarter slower for good (README,
 * "Idle start"), and which server that hits would decide a ratio.
 */
const BARE_OPTIONS = ['--no-memory-reducer']

/** A bare Fastify server (`bare-server.ts`) of its own on a free port, with `env` (`PAGE`). */
export async function startBareServer(
  env: Record<string, string> = {},
): Promise<Started & { url: string }> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const script = join(import.meta.dirname, 'bare-server.js')
  const started = await startProcess(
    script,
    url,
    '/hello',
    { ...env, PORT: String(port) },
    BARE_OPTIONS,
  )
  return { ...started, url }
}

/**
 * A built script as a process of its own with an IPC channel (`node <options> <script> <args>`:
 * the bare servers' options, PATH its only variable), whose every answer follows one message:
 * `ask` sends one and resolves with the answer, or rejects when the process has ended or ends
 * first, when it cannot start, and when another question is still unanswered (one at a time).
 */
export function askingProcess(
  script: string,
  args: string[],
): { ask: (message: unknown) => Promise<unknown>; stop: () => void } {
  const child = fork(script, args, {
    execArgv: BARE_OPTIONS,
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  /** Why no question can be answered any more, once that is so. */
  let gone: Error | undefined
  /** The question waiting for its answer. */
  let pending: { resolve: (answer: unknown) => void; reject: (err: Error) => void } | undefined
  const fail = (err: Error) => {
    gone ??= err
    pending?.reject(gone)
    pending = undefined
  }
  child.on('message', (answer: unknown) => {
    pending?.resolve(answer)
    pending = undefined
  })
  child.on('exit', (code, signal) => fail(new Error(`${script} ended (${code ?? signal})`)))
  child.on('error', (err) => fail(err))
  return {
    ask: (message) =>
      new Promise((resolve, reject) => {
        if (gone) return reject(gone)
        if (pending) return reject(new Error(`${script}: one question at a time`))
        pending = { resolve, reject }
        child.send(message as object, (err) => {
          if (err) fail(err)
        })
      }),
    stop: () => {
      child.kill('SIGTERM')
    },
  }
}
