import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { v8Settings } from '../src/v8-flags.js'

const run = promisify(execFile)
const root = new URL('../', import.meta.url).pathname

/**
 * Garbage for about 40 scavenges of a 4 MB young generation, each with up to 200,000 live objects
 * to copy: without the setting about half of them use helpers, even with every core busy.
 */
const GARBAGE =
  'let a = []; for (let i = 0; i < 4e6; i++) { a.push({ i }); if (a.length > 2e5) a = [] }'

/**
 * Runs a process that loads the controller's V8 settings the way `src/server.ts` does (as its
 * first import) and makes garbage; resolves with the time its scavenges spent on helper threads.
 */
async function helperScavengeMs(args: string[], withSettings: boolean): Promise<number[]> {
  const load = withSettings ? ['--import', './dist/src/v8-flags.js'] : []
  const { stdout } = await run(
    process.execPath,
    ['--trace-gc-nvp', '--max-semi-space-size=4', ...args, ...load, '-e', GARBAGE],
    { cwd: root, env: { PATH: process.env.PATH ?? '' }, maxBuffer: 64 << 20 },
  )
  const times = [...stdout.matchAll(/ background\.scavenge\.parallel=([\d.]+)/g)].map((m) =>
    Number(m[1]),
  )
  expect(times.length).toBeGreaterThan(10)
  return times
}

describe('V8 settings of the server process', () => {
  it('turn parallel scavenges off unless the command line or NODE_OPTIONS names them', () => {
    expect(v8Settings([])).toEqual(['--liftoff-only', '--no-parallel-scavenge'])
    expect(v8Settings(['--max-semi-space-size=2', ''])).toEqual([
      '--liftoff-only',
      '--no-parallel-scavenge',
    ])
    for (const own of ['--parallel-scavenge', '--no-parallel-scavenge', '--parallel_scavenge']) {
      expect(v8Settings(['--max-semi-space-size=2', own])).toEqual(['--liftoff-only'])
    }
    // A different setting that only begins alike is not the operator's choice of this one.
    expect(v8Settings(['--parallel-scavenge-task-trace'])).toContain('--no-parallel-scavenge')
  })

  it('take effect in the running process: no scavenge work on helper threads', async () => {
    // Without them the same process hands scavenges to helpers (the check sees a difference).
    const without = await helperScavengeMs([], false)
    expect(without.some((ms) => ms > 0)).toBe(true)
    const settled = await helperScavengeMs([], true)
    expect(settled.every((ms) => ms === 0)).toBe(true)
    // An operator's own `--parallel-scavenge` stays in force.
    const own = await helperScavengeMs(['--parallel-scavenge'], true)
    expect(own.some((ms) => ms > 0)).toBe(true)
  })
})
