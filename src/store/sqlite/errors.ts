import { SqliteError } from 'better-sqlite3'
import { AppError } from '../../errors.js'

/**
 * Turns a UNIQUE constraint failure into a 400 naming the public field; other errors pass through.
 * `columns` maps `table.column` (as SQLite names it) to the public field name.
 */
export function mapUniqueViolation(
  err: unknown,
  columns: Record<string, string>,
  values: Record<string, unknown>,
): unknown {
  if (!(err instanceof SqliteError) || err.code !== 'SQLITE_CONSTRAINT_UNIQUE') return err
  const column = /UNIQUE constraint failed: ([\w.]+)/.exec(err.message)?.[1] ?? ''
  const field = columns[column]
  if (field === undefined) return err
  const value = values[field]
  return new AppError('COULD_NOT_VALIDATE', {
    cause: {
      field,
      reason: `another entity already has this ${field}`,
      ...(typeof value === 'string' ? { value } : {}),
    },
  })
}

/**
 * Turns a full-text query the index cannot read (`fts5: syntax error`) into a 400: a filter value
 * that reaches the trigram index is user input. Other errors pass through.
 */
export function mapDataError(err: unknown): unknown {
  if (err instanceof SqliteError && /^fts5: /.test(err.message)) {
    return new AppError('INVALID_FILTER', {
      cause: { field: 'filter', reason: 'a value the full-text index cannot search for' },
    })
  }
  return err
}
