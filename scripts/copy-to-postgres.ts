import { existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { copyStore } from '../src/store/copy.js'
import { isPostgresUrl, openStore } from '../src/store/open-store.js'
import { redactUrl } from '../src/store/postgres/connection.js'

const USAGE =
  'usage: npm run copy-to-postgres -- <sqlite-file> <postgres://user:password@host:port/db>'
const quiet = { info: () => {}, warn: () => {} }

/** Copies an existing SQLite database into an empty PostgreSQL database (migrated first). */
async function main(): Promise<number> {
  let positionals: string[]
  try {
    positionals = parseArgs({ allowPositionals: true, strict: true }).positionals
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`)
    return 2
  }
  const [file, url] = positionals
  if (positionals.length !== 2 || !file || !url || !isPostgresUrl(url) || isPostgresUrl(file)) {
    process.stderr.write(`${USAGE}\n`)
    return 2
  }
  if (!existsSync(file)) {
    process.stderr.write(`no SQLite database at ${file}\n`)
    return 2
  }
  const settings = { poolSize: 2, connectTimeoutMs: 10_000, statementTimeoutMs: 600_000 }
  const from = await openStore({ db: file, ...settings }, quiet, async () => {})
  try {
    const to = await openStore({ db: url, ...settings }, quiet, async () => {})
    try {
      const counts = await copyStore(from, to)
      process.stdout.write(
        `copied ${counts.signers} signers, ${counts.policies} policies, ${counts.identities} identities and ${counts.sessions} sessions to ${redactUrl(url)}\n`,
      )
      return 0
    } finally {
      await to.close()
    }
  } finally {
    await from.close()
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`copy failed: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  },
)
