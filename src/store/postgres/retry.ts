import type pg from 'pg'
import { AppError } from '../../errors.js'
import type { Queryable } from './connection.js'

/**
 * SQLSTATEs after which the server has rolled the statement's transaction back and running it
 * again may succeed: a deadlock (40P01: two instances, or an instance beside one of an older
 * release during a rolling upgrade, locked the same rows in different orders, and the server
 * rolled one back) and a serialization failure (40001, which only stricter isolation levels than
 * this controller's raise).
 */
const RETRYABLE = new Set(['40P01', '40001'])

/** Attempts in all, the first included, before the client is told to try again. */
export const ATTEMPTS = 4

/** When work the server rolled back runs again. */
export interface RetryPolicy {
  /**
   * No attempt starts once this long has passed since the first (the statement timeout: a
   * deadlock is found only after the server's deadlock_timeout, 1 s by default, of waiting).
   */
  budgetMs: number
  /** Told of each collision before the work runs again (a log line for the operator). */
  onRetry?: (sqlstate: string, attempt: number) => void
  /** Told of each statement run again for a plan gone stale (see isStalePlan), with where it ran. */
  onStalePlan?: (within: 'statement' | 'unit of work') => void
}

/** The SQLSTATE of an error after which the work may run again, or undefined. */
export function retryableCode(err: unknown): string | undefined {
  if (!(err instanceof Error) || !('code' in err) || typeof err.code !== 'string') return undefined
  return RETRYABLE.has(err.code) ? err.code : undefined
}

/**
 * Whether attempt `attempt`, which the server rolled back, may be followed by another: attempts
 * and time left. Pauses first (a few milliseconds, growing, with jitter, so that the transactions
 * that collided do not collide again in step).
 */
export async function mayRetry(
  policy: RetryPolicy,
  sqlstate: string,
  attempt: number,
  startedAt: number,
): Promise<boolean> {
  if (attempt >= ATTEMPTS || performance.now() - startedAt >= policy.budgetMs) return false
  policy.onRetry?.(sqlstate, attempt)
  await new Promise((resolve) => setTimeout(resolve, 2 ** attempt * (2 + Math.random() * 3)))
  return true
}

/** What the client gets once the attempts are spent: 503, to try again (this change is not stored). */
export function conflictError(): AppError {
  return new AppError('SERVICE_UNAVAILABLE', {
    cause: {
      field: 'database',
      reason:
        'concurrent changes to the same data kept colliding; this change was not stored, try again',
    },
    headers: { 'retry-after': '1' },
  })
}

/**
 * Runs `attempt` (one statement, its own transaction) again when the server rolled it back for a
 * deadlock or a serialization failure, as `policy` allows; then throws conflictError. Any other
 * error passes through at once.
 */
export async function retrying<T>(policy: RetryPolicy, attempt: () => Promise<T>): Promise<T> {
  const startedAt = performance.now()
  for (let n = 1; ; n++) {
    try {
      return await attempt()
    } catch (err) {
      const sqlstate = retryableCode(err)
      if (sqlstate === undefined) throw err
      if (!(await mayRetry(policy, sqlstate, n, startedAt))) throw conflictError()
    }
  }
}

/**
 * Whether a named statement failed because the connection prepared it before its tables changed
 * shape: a later release's migration, run while this instance still serves (a rolling upgrade),
 * changed the type or collation of a column it reads. The server then refuses every execution of
 * it on that connection ('cached plan must not change result type', SQLSTATE 0A000); the same text
 * planned anew runs. Told by the code and the server function that raised it, not the message,
 * which follows the server's language; any other 0A000 is not run again.
 */
export function isStalePlan(err: unknown, named: boolean): boolean {
  return (
    named &&
    err instanceof Error &&
    'code' in err &&
    err.code === '0A000' &&
    'routine' in err &&
    err.routine === 'RevalidateCachedQuery'
  )
}

/** A statement's config without its name: parsed and planned anew, not prepared. */
function unnamed(statement: unknown): unknown {
  if (typeof statement !== 'object' || statement === null || !('name' in statement))
    return statement
  const { name: _, ...rest } = statement as { name: unknown }
  return rest
}

/**
 * The pool as repositories query it outside a unit of work (promises only, as they call it): each
 * statement is its own transaction, so one the server rolled back runs again (see `retrying`). A
 * named statement whose plan went stale (isStalePlan) runs once more unnamed; the pool has dropped
 * the connection it failed on (it drops every connection a statement failed on).
 */
export function retryingPool(pool: pg.Pool, policy: RetryPolicy): Queryable {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>
  const once = async (args: unknown[]) => {
    try {
      return await query(...args)
    } catch (err) {
      const fresh = unnamed(args[0])
      if (!isStalePlan(err, fresh !== args[0])) throw err
      policy.onStalePlan?.('statement')
      return query(fresh, ...args.slice(1))
    }
  }
  return {
    query: ((...args: unknown[]) => retrying(policy, () => once(args))) as pg.Pool['query'],
  }
}
