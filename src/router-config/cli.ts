import { readFileSync } from 'node:fs'
import { stringify } from 'yaml'
import { checkRouterConfig, type Problem } from './index.js'
import { INIT_TEMPLATE } from './init-template.js'

const USAGE = `usage:
  router-config check FILE [--strict] [--json] [--print] [--check-files]
  router-config init

check   prints each problem (to stdout; to stderr with --print) as FILE:LINE:COL: error|warning: PATH: MESSAGE; exits 0 without errors,
        1 with errors, 2 when the file cannot be read
  --strict       warnings count as errors
  --json         prints {"valid","errors","warnings"} instead
  --print        prints the effective configuration with every default (YAML; JSON with --json)
  --check-files  checks that identity files exist and hold the PEM they should
init    writes a complete standard configuration to stdout`

/** Runs the command; returns the exit status. Output goes through the given writers. */
export function run(
  args: string[],
  env: Record<string, string | undefined>,
  out: (s: string) => void,
  err: (s: string) => void,
): number {
  const [command, ...rest] = args
  if (command === 'init' && rest.length === 0) {
    out(INIT_TEMPLATE)
    return 0
  }
  const flags = new Set(rest.filter((a) => a.startsWith('--')))
  const files = rest.filter((a) => !a.startsWith('--'))
  const unknown = [...flags].filter(
    (f) => !['--strict', '--json', '--print', '--check-files'].includes(f),
  )
  if (command !== 'check' || files.length !== 1 || unknown.length > 0) {
    err(`${unknown.length > 0 ? `unknown option ${unknown.join(', ')}\n` : ''}${USAGE}\n`)
    return 2
  }
  const file = files[0] as string
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    err(
      `${file}: cannot read the file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`,
    )
    return 2
  }
  const result = checkRouterConfig(text, env, { checkFiles: flags.has('--check-files') })
  const strict = flags.has('--strict')
  const errors = strict ? [...result.errors, ...result.warnings] : result.errors
  const warnings = strict ? [] : result.warnings
  const valid = errors.length === 0
  if (flags.has('--json')) {
    const body: Record<string, unknown> = { valid, errors, warnings }
    if (flags.has('--print')) body.config = result.config ?? null
    out(`${JSON.stringify(body, null, 2)}\n`)
  } else {
    const line = (kind: string) => (p: Problem) =>
      `${file}:${p.line}:${p.column}: ${kind}: ${p.path || '(file)'}: ${p.message}\n`
    // Problems go to stdout, unless stdout carries the printed configuration.
    const report = flags.has('--print') ? err : out
    for (const p of [...errors.map(line('error')), ...warnings.map(line('warning'))]) report(p)
    if (flags.has('--print') && result.config) out(stringify(result.config))
  }
  return valid ? 0 : 1
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, ''))) {
  process.exitCode = run(
    process.argv.slice(2),
    process.env,
    (s) => process.stdout.write(s),
    (s) => process.stderr.write(s),
  )
}
