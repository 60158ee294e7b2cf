import { AppError } from '../../errors.js'
import { unavailable } from './connection.js'

/**
 * Turns a unique violation (SQLSTATE 23505) into a 400 naming the public field, and an unreachable
 * database into a 503; other errors pass through. `constraints` maps constraint names to fields.
 */
export function mapPgError(
  err: unknown,
  constraints: Record<string, string> = {},
  values: Record<string, unknown> = {},
): unknown {
  if (
    typeof err === 'object' &&
    err !== null &&
    'code' in err &&
    err.code === '23505' &&
    'constraint' in err &&
    typeof err.constraint === 'string'
  ) {
    const field = constraints[err.constraint]
    if (field !== undefined) {
      const value = values[field]
      return new AppError('COULD_NOT_VALIDATE', {
        cause: {
          field,
          reason: `another entity already has this ${field}`,
          ...(typeof value === 'string' ? { value } : {}),
        },
      })
    }
  }
  return unavailable(err)
}

/** A timestamptz as the API shows it: RFC 3339 UTC with milliseconds. */
export function iso(value: Date): string
export function iso(value: Date | null): string | null
export function iso(value: Date | null): string | null {
  return value === null ? null : value.toISOString()
}
