import type { LoginFailureRecord, LoginFailureRepository } from '../contract.js'
import type { Queryable } from './connection.js'
import { iso, mapPgError } from './errors.js'

/** Names no identity has, kept at most after each purge (as on SQLite; migration 017). */
export const MAX_UNKNOWN_NAMES = 100_000

/**
 * The brute-force counter on PostgreSQL: one row per user name, shared by every instance. The names
 * of no identity are bounded at each purge (every minute): the newest `maxUnknownNames` are kept.
 */
export class PgLoginFailureRepository implements LoginFailureRepository {
  constructor(
    private readonly db: Queryable,
    private readonly maxUnknownNames = MAX_UNKNOWN_NAMES,
  ) {}

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
  async addFailure(name: string, at: string, known = false): Promise<number> {
    // A name once an identity's stays known (its row is never forgotten to bound the others).
    const sql = `INSERT INTO login_failures (name, failures, updated_at, known) VALUES ($1, 1, $2, $3)
      ON CONFLICT (name) DO UPDATE SET failures = login_failures.failures + 1, updated_at = $2,
        known = login_failures.known OR excluded.known
      RETURNING failures`
    const res = await this.run('login-failures-add', sql, [name, at, known])
    return (res.rows[0] as { failures: number }).failures // RETURNING yields the row
  }

  async lockUntil(name: string, until: string): Promise<void> {
    // Never shortened: another instance's later failure may have set a longer lock already.
    const sql =
      'UPDATE login_failures SET locked_until = GREATEST(locked_until, $2) WHERE name = $1'
    await this.run('login-failures-lock', sql, [name, until])
  }

  async clear(name: string): Promise<void> {
    await this.run('login-failures-clear', 'DELETE FROM login_failures WHERE name = $1', [name])
  }

  /** Also forgets all but the newest `maxUnknownNames` names of no identity, locked or not. */
  async deleteBefore(before: string): Promise<number> {
    const sql = `DELETE FROM login_failures
      WHERE updated_at < $1 AND (locked_until IS NULL OR locked_until < $1)`
    const old = (await this.run('login-failures-purge', sql, [before])).rowCount ?? 0
    // The newest `maxUnknownNames` are kept: older ones go. The cut is a time read once, and each
    // row deleted is checked against it again as it is now (a name that failed again meanwhile,
    // or became an identity's, is newer or known, and stays); both reads use the partial index.
    const bound = `DELETE FROM login_failures WHERE NOT known AND updated_at < (
      SELECT updated_at FROM login_failures WHERE NOT known
       ORDER BY updated_at DESC OFFSET $1 LIMIT 1)`
    const keep = Math.max(this.maxUnknownNames - 1, 0)
    const over = (await this.run('login-failures-bound', bound, [keep])).rowCount
    return old + (over ?? 0)
  }
}
