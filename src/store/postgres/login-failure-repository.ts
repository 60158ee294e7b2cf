import type { LoginFailureRecord, LoginFailureRepository } from '../contract.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'

/** The brute-force counter on PostgreSQL: one row per user name, shared by every instance. */
export class PgLoginFailureRepository implements LoginFailureRepository {
  constructor(private readonly db: Queryable) {}

  private async run(name: string, text: string, values: unknown[]) {
    try {
      return await this.db.query({ name, text, values })
    } catch (err) {
      throw mapPgError(err)
    }
  }

  async get(name: string): Promise<LoginFailureRecord | undefined> {
    const sql = 'SELECT failures, locked_until FROM login_failures WHERE name = $1'
    const row = (await this.run('login-failures-get', sql, [name])).rows[0] as
      | { failures: number; locked_until: Date | null }
      | undefined // the selected columns
    if (!row) return undefined
    return { failures: row.failures, lockedUntil: row.locked_until && iso(row.locked_until) }
  }

  /** One statement, so instances counting the same name at once never lose a failure. */
  async addFailure(name: string, at: string): Promise<number> {
    const sql = `INSERT INTO login_failures (name, failures, updated_at) VALUES ($1, 1, $2)
      ON CONFLICT (name) DO UPDATE SET failures = login_failures.failures + 1, updated_at = $2
      RETURNING failures`
    const res = await this.run('login-failures-add', sql, [name, at])
    return (res.rows[0] as { failures: number }).failures // RETURNING yields the row
  }

  async lockUntil(name: string, until: string): Promise<void> {
    const sql = 'UPDATE login_failures SET locked_until = $2 WHERE name = $1'
    await this.run('login-failures-lock', sql, [name, until])
  }

  async clear(name: string): Promise<void> {
    await this.run('login-failures-clear', 'DELETE FROM login_failures WHERE name = $1', [name])
  }

  async deleteBefore(before: string): Promise<number> {
    const sql = `DELETE FROM login_failures
      WHERE updated_at < $1 AND (locked_until IS NULL OR locked_until < $1)`
    return (await this.run('login-failures-purge', sql, [before])).rowCount ?? 0
  }
}
