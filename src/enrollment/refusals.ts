import { AppError } from '../errors.js'
import type { RefusalKind } from '../jwt/verify.js'
import type { AuthPolicyRecord, SignerRecord } from '../store/contract.js'

/** Every `reason` label of `ctrl_enrollments_total` (a bounded set). */
export const ENROLLMENT_REASONS = [
  'none',
  ...['malformed', 'unknown_issuer', 'unknown_kid', 'bad_signature', 'expired', 'audience'],
  ...['missing', 'signer', 'claims', 'not_allowed', 'already_enrolled', 'name_taken', 'csr'],
  // A signer's token rules (issue 26), applied as at login.
  ...['claim_condition', 'token_lifetime', 'token_age'],
  ...['rate_limited', 'error'],
] as const
export type EnrollmentReason = (typeof ENROLLMENT_REASONS)[number]

/**
 * A CSR that cannot be signed: the reason is for the log and `cause.reason`. Here, not beside the
 * CA that throws it: the enrollment path tells it apart without loading the x509 library, which
 * only a configured CA needs (about 3 MB of the heap for good, more while it compiles).
 */
export class CsrRefused extends Error {
  override name = 'CsrRefused'
}

/** A refused enrollment: `error` goes to the client, `kind` and `reason` (precise) to logs and metrics. */
export class EnrollmentRefused extends Error {
  override name = 'EnrollmentRefused'
  constructor(
    readonly kind: EnrollmentReason,
    readonly reason: string,
    readonly error: AppError,
    readonly signerId?: string,
  ) {
    super(reason)
  }
}

export const invalidToken = (kind: EnrollmentReason, reason: string, signerId?: string) =>
  new EnrollmentRefused(kind, reason, new AppError('INVALID_ENROLLMENT_TOKEN'), signerId)
export const notAllowed = (reason: string, signerId: string) =>
  new EnrollmentRefused(
    'not_allowed',
    reason,
    new AppError('INVALID_ENROLLMENT_NOT_ALLOWED'),
    signerId,
  )

export function tokenKind(kind: RefusalKind): EnrollmentReason {
  // `policy` here only means the token is not from the signer `ziti-token-issuer-id` names.
  if (kind === 'policy' || kind === 'no_identity' || kind === 'identity_disabled') return 'signer'
  return kind
}

/** Why the signer or its policy do not allow this kind of enrollment, if they do not. */
export function refusal(
  signer: SignerRecord,
  policy: AuthPolicyRecord | undefined,
  withCsr: boolean,
) {
  if (!policy) return 'the enrollment policy does not exist'
  if (withCsr) {
    if (!signer.enrollToCertEnabled) return 'the signer does not allow enrollment with a CSR'
    if (!policy.certAllowed) return 'the enrollment policy does not allow certificate login'
    return undefined
  }
  if (!signer.enrollToTokenEnabled) return 'the signer does not allow token enrollment'
  if (!policy.extJwtAllowed) return 'the enrollment policy does not allow JWT login'
  if (policy.allowedSigners.length > 0 && !policy.allowedSigners.includes(signer.id)) {
    return 'the enrollment policy does not allow this signer'
  }
  return undefined
}

export function alreadyEnrolled(signer: SignerRecord): EnrollmentRefused {
  const error = new AppError('ENROLLMENT_IDENTITY_ALREADY_ENROLLED')
  return new EnrollmentRefused(
    'already_enrolled',
    'an identity with this externalId exists',
    error,
    signer.id,
  )
}
