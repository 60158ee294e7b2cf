import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The migration files of both stores: `migrations/sqlite` and `migrations/postgres`. */
export interface MigrationLog {
  info(obj: object, msg: string): void
}

export interface Migration {
  version: number
  name: string
  sql: string
}

/** The migrations folder sits at the package root, whether we run from src/ or from dist/src/. */
export function migrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'migrations')
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate
    dir = dirname(dir)
  }
  throw new Error('migrations folder not found beside package.json')
}

export function readMigrations(dir = join(migrationsDir(), 'sqlite')): Migration[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const migrations: Migration[] = []
  for (const [index, file] of files.entries()) {
    const match = /^(\d{3})_[\w-]+\.sql$/.exec(file)
    if (!match) throw new Error(`migration file name must look like 001_name.sql: ${file}`)
    const version = Number(match[1])
    if (version !== index + 1) {
      throw new Error(`migrations must be numbered 1, 2, 3... without gaps or duplicates: ${file}`)
    }
    migrations.push({ version, name: file, sql: readFileSync(join(dir, file), 'utf8') })
  }
  return migrations
}
