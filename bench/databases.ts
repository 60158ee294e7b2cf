import pg from 'pg'

/** The PostgreSQL server of the bench's own databases (BENCH_POSTGRES_URL). */
export const PG_SERVER =
  process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** The URL of database `name` on PG_SERVER. */
export function databaseUrl(name: string): string {
  const url = new URL(PG_SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

/** A database of the bench's own on the PostgreSQL server, or undefined when none answers. */
export async function benchDatabase(name: string): Promise<string | undefined> {
  const admin = new pg.Client({ connectionString: PG_SERVER, connectionTimeoutMillis: 2000 })
  try {
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.query(`CREATE DATABASE ${name}`)
    return databaseUrl(name)
  } catch {
    return undefined
  } finally {
    await admin.end().catch(() => {})
  }
}

export async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_SERVER })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.end()
}
