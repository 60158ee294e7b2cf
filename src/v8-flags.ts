import { setFlagsFromString } from 'node:v8'

/**
 * V8 settings of the controller process, applied before anything else loads.
 *
 * - `--liftoff-only`: undici (JWKS fetches) parses HTTP with a WebAssembly build of llhttp.
 *   Optimising that module with TurboFan leaves about 25 MB of compiler memory resident for good,
 *   for a parser that runs a few times a minute; its baseline (Liftoff) code is plenty. The
 *   controller runs no other WebAssembly.
 * - `--no-parallel-scavenge`: with the 2 MB young generation `npm start` sets, a scavenge copies
 *   little, and handing that to helper threads costs more than it saves once the cores are busy
 *   (the main thread waits for helpers that wait for a core). Measured with 32 connections of
 *   distinct RS256 logins on 2 cores: 18% more logins a second (median of 5 pairs, each pair
 *   better), and the same list rates. A command line or NODE_OPTIONS that names the setting
 *   either way (`--parallel-scavenge` on a machine with cores to spare) keeps its own choice.
 */
export function v8Settings(commandLine: readonly string[]): string[] {
  const flags = ['--liftoff-only']
  if (!commandLine.some((arg) => /^--(no-)?parallel[-_]scavenge(=|$)/.test(arg))) {
    flags.push('--no-parallel-scavenge')
  }
  return flags
}

const nodeOptions = (process.env.NODE_OPTIONS ?? '').split(/\s+/)
for (const flag of v8Settings([...process.execArgv, ...nodeOptions])) setFlagsFromString(flag)
