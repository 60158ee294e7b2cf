import { parseArgs } from 'node:util'
import { stringify } from 'yaml'
import { caughtMessage } from '../errors.js'
import { checkRouterConfig, type Problem } from './index.js'
import { INIT_TEMPLATE } from './init-template.js'
import { readSmallFileBytes, SmallFileError } from './small-file.js'

const USAGE = `usage:
  router-config check FILE [--strict] [--json] [--print] [--check-files]
  router-config init
  router-config --help

check   prints each problem (to stdout; to stderr with --print) as FILE:LINE:COL: error|warning: PATH: MESSAGE; exits 0 without errors,
        1 with errors, 2 when the file cannot be read (only regular files of at most 1 MiB are read)
  --strict       warnings count as errors
  --json         prints {"valid","errors","warnings"} instead
  --print        prints the effective configuration with every default (YAML; JSON with --json)
  --check-files  checks that identity files exist, are regular files of at most 1 MiB and hold
                 the PEM they should
init    writes a complete standard configuration to stdout`

const OPTIONS = {
  strict: { type: 'boolean' },
  json: { type: 'boolean' },
  print: { type: 'boolean' },
  'check-files': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

/** Runs the command; returns the exit status. Output goes through the given writers. */
export function run(
  args: string[],
  env: Record<string, string | undefined>,
  out: (s: string) => void,
  err: (s: string) => void,
): number {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (e) {
    // parseArgs throws a TypeError naming the unknown option or the bad value.
    err(`router-config: ${caughtMessage(e)}\n${USAGE}\n`)
    return 2
  }
  const { values: flags, positionals } = parsed
  if (flags.help) {
    out(`${USAGE}\n`)
    return 0
  }
  const [command, file, ...extra] = positionals
  const anyFlag = flags.strict || flags.json || flags.print || flags['check-files']
  if (command === 'init' && file === undefined && !anyFlag) {
    out(INIT_TEMPLATE)
    return 0
  }
  if (command !== 'check' || file === undefined || extra.length > 0) {
    const problem =
      command === undefined
        ? 'a command is required'
        : command === 'init'
          ? 'init takes no file and no option'
          : command !== 'check'
            ? `unknown command "${command}"`
            : 'check takes exactly one file'
    err(`router-config: ${problem}\n${USAGE}\n`)
    return 2
  }
  let text: Buffer
  try {
    // The checker decodes the bytes as the router does: a byte that is not UTF-8 is a located error.
    text = readSmallFileBytes(file)
  } catch (e) {
    if (e instanceof SmallFileError) {
      err(`${file}: not read: it ${e.message}; only regular files of at most 1 MiB are checked\n`)
      return 2
    }
    const code = e instanceof Error && 'code' in e ? e.code : undefined
    err(`${file}: cannot read the file: ${typeof code === 'string' ? code : caughtMessage(e)}\n`)
    return 2
  }
  const result = checkRouterConfig(text, env, { checkFiles: flags['check-files'] === true })
  const strict = flags.strict === true
  const errors = strict ? [...result.errors, ...result.warnings] : result.errors
  const warnings = strict ? [] : result.warnings
  const valid = errors.length === 0
  if (flags.json) {
    const body: Record<string, unknown> = { valid, errors, warnings }
    if (flags.print) body.config = result.printable ?? null
    out(`${JSON.stringify(body, null, 2)}\n`)
  } else {
    const line = (kind: string) => (p: Problem) =>
      `${file}:${p.line}:${p.column}: ${kind}: ${p.path || '(file)'}: ${p.message}\n`
    // Problems go to stdout, unless stdout carries the printed configuration.
    const report = flags.print ? err : out
    for (const p of [...errors.map(line('error')), ...warnings.map(line('warning'))]) report(p)
    if (flags.print && result.printable) out(stringify(result.printable))
  }
  return valid ? 0 : 1
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, ''))) {
  // `npm run router-config` runs in the package's folder; relative paths (the file, and identity
  // files with --check-files) mean what they mean where the user typed the command.
  const typedIn = process.env.npm_lifecycle_event === 'router-config' && process.env.INIT_CWD
  let entered = true
  try {
    if (typedIn) process.chdir(typedIn)
  } catch (e) {
    // Exits as for a file that cannot be read, with the reason on one line.
    process.stderr.write(`router-config: cannot enter ${typedIn}: ${caughtMessage(e)}\n`)
    process.exitCode = 2
    entered = false
  }
  if (entered) {
    process.exitCode = run(
      process.argv.slice(2),
      process.env,
      (s) => process.stdout.write(s),
      (s) => process.stderr.write(s),
    )
  }
}
