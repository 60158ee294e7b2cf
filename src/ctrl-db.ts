#!/usr/bin/env node
import { existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { ruleProblems } from './backups/integrity.js'
import { defaultSnapshotDir, takeSnapshot } from './backups/snapshot.js'
import { systemClock } from './clock.js'
import { ConfigError, loadConfig } from './config.js'
import { AppError, caughtMessage } from './errors.js'
import { isPostgresUrl } from './store/open-store.js'
import { backupFile, integrityFacts, openReadOnly, storageProblems } from './store/sqlite/backup.js'

const USAGE = `usage: ctrl-db snapshot [--db FILE] [--dir DIR] [--keep N]
       ctrl-db check FILE`

/** Exit statuses: 0 done, 1 the snapshot failed or the check found problems, 2 a bad command. */
class Usage extends Error {}

/** `ctrl-db snapshot`: the API's snapshot of a running or stopped controller's file, for cron. */
async function snapshot(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { db: { type: 'string' }, dir: { type: 'string' }, keep: { type: 'string' } },
    strict: true,
  })
  // The same settings as the controller (CTRL_DB, CTRL_SNAPSHOT_DIR, CTRL_SNAPSHOT_KEEP).
  const config = loadConfig({
    ...process.env,
    ...(values.db ? { CTRL_DB: values.db } : {}),
    ...(values.dir ? { CTRL_SNAPSHOT_DIR: values.dir } : {}),
    ...(values.keep ? { CTRL_SNAPSHOT_KEEP: values.keep } : {}),
  })
  const db = config.dbPath
  if (isPostgresUrl(db)) {
    throw new Error('CTRL_DB is PostgreSQL: back it up with pg_dump -Fc (README, "Backups")')
  }
  if (db === ':memory:' || !existsSync(db)) throw new Error(`no SQLite database at ${db}`)
  const result = await takeSnapshot({
    dir: config.snapshotDir ?? defaultSnapshotDir(db),
    keep: config.snapshotKeep,
    clock: systemClock,
    copy: (path) => backupFile(db, path),
    log: { error: () => {} },
  }).catch((err: unknown) => {
    // The code names the cause; the reason is the operator's to read.
    const code = err instanceof AppError ? `${err.code}: ` : ''
    throw new Error(`${code}${caughtMessage(err)}`)
  })
  process.stdout.write(`${result.path} ${result.bytes} bytes ${result.durationMs} ms\n`)
  return 0
}

/** `ctrl-db check FILE`: the integrity check of the API, on a snapshot (or any database file). */
function check(args: string[]): number {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: true })
  const [file] = positionals
  if (positionals.length !== 1 || !file) throw new Usage('check takes one FILE')
  if (!existsSync(file)) throw new Usage(`no file at ${file}`)
  const db = openReadOnly(file)
  let problems: string[]
  try {
    problems = storageProblems(db)
    try {
      problems.push(...ruleProblems(integrityFacts(db)))
    } catch (err) {
      // A damaged file may not let the rules read it: the engine's findings say why.
      if (problems.length === 0) throw err
    }
  } finally {
    db.close()
  }
  for (const p of problems) process.stdout.write(`${p}\n`)
  if (problems.length > 0) {
    throw new Error(`${file}: ${problems.length} problem(s), the first: ${problems[0]}`)
  }
  process.stdout.write(`${file}: ok\n`)
  return 0
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    if (command === 'snapshot') return await snapshot(rest)
    if (command === 'check') return check(rest)
    if (command === '--help' || command === '-h') {
      process.stdout.write(`${USAGE}\n`)
      return 0
    }
    throw new Usage(command ? `unknown command ${command}` : 'a command is required')
  } catch (err) {
    const usage =
      err instanceof Usage || (err as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
    if (usage || err instanceof ConfigError) {
      process.stderr.write(`ctrl-db: ${caughtMessage(err)}\n${USAGE}\n`)
      return 2
    }
    process.stderr.write(`ctrl-db: ${caughtMessage(err)}\n`)
    return 1
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code
})
