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
 *   better), and the same list rates. A command line that names the setting either way
 *   (`--parallel-scavenge` on a machine with cores to spare) keeps its own choice.
 * - `--heap-growing-percent=30`: after each full collection V8 lets the old generation grow to a
 *   multiple of what survived before it collects again, a multiple it picks itself (up to 4 on a
 *   machine with this much memory). The controller keeps about 35 MB alive (its code, the modules'
 *   sources, bounded caches), and under logins its heap swelled to two or three times that
 *   between collections: after 50,000 logins, 300,000 mixed requests ended anywhere from 164 to
 *   227 MB resident, with peaks up to 252 MB. Held to 50% over what survived, such a run stayed
 *   at 170 MB from start to end; held to 30%, with the smaller SQLite page cache and the libraries
 *   loaded only where used, at 143 to 147 MB (three runs), within 3 MB of where it began. Two
 *   controllers side by side in turns (`bench/ab.ts`, RS256 logins of distinct tokens) served
 *   1.06 times the logins a second at 0.96 times the CPU a login with 30% (1.00 and 0.99 with
 *   50%): on that path the extra collections cost nothing measurable. They do cost where a request
 *   keeps more alive while its answer is written: the management page of 10 certificate signers
 *   (18 KB) served about 0.90 times the requests a second at 1.11 times the CPU (0.95 and 1.05
 *   with 50%). Named on the command line, the operator's own value stays.
 *
 * Node refuses both of the last two in NODE_OPTIONS ("is not allowed in NODE_OPTIONS"), so only
 * the command line (`node <options> dist/src/server.js`) can name them.
 */
export function v8Settings(commandLine: readonly string[]): string[] {
  /** Whether the command line names the setting itself (with or without a value). */
  const names = (setting: RegExp) => commandLine.some((arg) => setting.test(arg))
  const flags = ['--liftoff-only']
  if (!names(/^--(no-)?parallel[-_]scavenge(=|$)/)) flags.push('--no-parallel-scavenge')
  if (!names(/^--heap[-_]growing[-_]percent(=|$)/)) flags.push('--heap-growing-percent=30')
  return flags
}

for (const flag of v8Settings(process.execArgv)) setFlagsFromString(flag)
