import type pg from 'pg'
import { AppError } from '../../errors.js'
import type { Queryable } from './connection.js'

/**
 * SQLSTATEs after which the server has rolled the statement's transaction back and running it
 * again may succeed: a deadlock (40P01, where the server aborts one of the waiters) and a
 * serialization failure (40001). Two instances, or an instance beside one of an older release
 * during a rolling upgrade, can lock the same rows in different orders.
 */
const RETRYABLE = new Set(['40P01', '40001'])

/** Attempts in all, the first included, before the client is told to try again. */
export const ATTEMPTS = 4

export function isRetryable(err: unknown): boolean {
  return (
    err instanceof Error && 'code' in err && typeof err.code === 'string' && RETRYABLE.has(err.code)
  )
}

/**
 * A pause before attempt `attempt + 1`: a few milliseconds, growing, with jitter, so that the
 * transactions that collided do not collide again in step.
 */
export function backoff(attempt: number): Promise<void> {
  const ms = 2 ** attempt * (2 + Math.random() * 3)
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** What the client gets once every attempt collided: 503, to try again (nothing was stored). */
export function conflictError(): AppError {
  return new AppError('SERVICE_UNAVAILABLE', {
    cause: {
      field: 'database',
      reason: 'concurrent changes to the same data kept colliding; nothing was stored, try again',
    },
    headers: { 'retry-after': '1' },
  })
}

/**
 * Runs `attempt` (one statement or one whole transaction) again when the server rolled it back
 * for a deadlock or a serialization failure, up to ATTEMPTS times; then throws conflictError.
 * Any other error passes through at once.
 */
export async function retrying<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt()
    } catch (err) {
      if (!isRetryable(err)) throw err
      if (n >= ATTEMPTS) throw conflictError()
      await backoff(n)
    }
  }
}

/**
 * The pool as repositories query it outside a unit of work: each statement is its own
 * transaction, so one the server rolled back for a deadlock is run again (see `retrying`).
 */
export function retryingPool(pool: pg.Pool): Queryable {
  const query = (...args: unknown[]) =>
    retrying(() => (pool.query as (...a: unknown[]) => Promise<unknown>)(...args))
  return { query: query as unknown as pg.Pool['query'] }
}
