import { AppError } from '../errors.js'
import type { SecondaryResult } from '../jwt/authenticate.js'
import { REFUSAL_KINDS, type RefusalKind } from '../jwt/verify.js'

export type LoginMethod = 'password' | 'ext-jwt'

/** What the login route reports of each attempt: facts only; the labels are chosen here. */
export type LoginEvent =
  | { method: LoginMethod; ok: true }
  | { method: LoginMethod; ok: false; error: unknown; refusal: RefusalKind | undefined }

/**
 * Every `reason` of `ctrl_logins_total`: `none` on success; the JWT refusal kinds; then
 * `bad_credentials` (any refused password: unknown name, wrong password, disabled identity or a
 * policy without password login, which the client cannot tell apart either), `rate_limited`, and
 * `error` (the controller failed, a 5xx).
 */
export const LOGIN_REASONS = [
  'none',
  ...REFUSAL_KINDS,
  'bad_credentials',
  'rate_limited',
  'error',
] as const
export type LoginReason = (typeof LOGIN_REASONS)[number]

/** The `reason` label of a failed login. */
export function loginFailureReason(error: unknown, refusal: RefusalKind | undefined): LoginReason {
  if (refusal !== undefined) return refusal
  if (error instanceof AppError) {
    if (error.code === 'INVALID_AUTH') return 'bad_credentials'
    if (error.code === 'RATE_LIMITED') return 'rate_limited'
    if (error.statusCode < 500) return 'malformed'
    return 'error'
  }
  // Fastify's own refusals (schema validation, an unparsable body) carry a 4xx statusCode.
  const status =
    typeof error === 'object' && error !== null && 'statusCode' in error
      ? Number(error.statusCode)
      : 500
  return status >= 400 && status < 500 ? 'malformed' : 'error'
}

/** The `reason` label of a secondary-factor check: `none` when met, else why not. */
export function secondaryReason(result: SecondaryResult): string {
  return result.met ? 'none' : result.kind
}
