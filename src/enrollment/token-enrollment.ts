import type { AuditService } from '../audit/audit-service.js'
import type { ChangeBus } from '../changes.js'
import { AppError } from '../errors.js'
import { newId } from '../ids.js'
import type { ExternalJwtVerifier } from '../jwt/authenticate.js'
import { JwtRejected, type VerifiedJwt } from '../jwt/verify.js'
import type { AuthPolicyRecord, IdentityRecord, SignerRecord, Store } from '../store/contract.js'
import { ClaimsRefused, type EnrollmentClaims, enrollmentClaims } from './claims.js'
import type { ControllerDirectory, ControllerSummary } from './controllers.js'
import type { EnrollmentCa, IssuedCertificate } from './enrollment-ca.js'
import {
  alreadyEnrolled,
  CsrRefused,
  EnrollmentRefused,
  invalidToken,
  notAllowed,
  refusal,
  tokenKind,
} from './refusals.js'

export { ENROLLMENT_REASONS, type EnrollmentReason, EnrollmentRefused } from './refusals.js'

export interface EnrollmentRequest {
  /** Bearer tokens in header order: the first that verifies is used. */
  tokens: string[]
  /** `ziti-token-issuer-id`: the signer the token must come from. */
  issuerId?: string | undefined
  csrPem?: string | undefined
  requestId: string | null
}

export interface EnrollmentResult {
  identity: IdentityRecord
  signer: SignerRecord
  /** With a CSR: the leaf and intermediates. */
  certificate?: IssuedCertificate
  controllers: ControllerSummary[]
}

export interface TokenEnrollmentOptions {
  verifier: Pick<ExternalJwtVerifier, 'verifyWithoutIdentity'>
  store: Store
  changes: ChangeBus
  audit: AuditService
  policy: (id: string) => Promise<AuthPolicyRecord | undefined>
  controllers: ControllerDirectory
  clock: () => Date
  /** Without a CA, a CSR is refused and token enrollment still works. */
  ca?: EnrollmentCa | undefined
  certValidityMs: number
}

/**
 * JWT enrollment (OpenZiti 2.x `enroll/token`): a provider's token creates the identity it names,
 * with or without a certificate. Everything that does not depend on stored identities is checked
 * before any identity is looked up, so a refusal never tells whether one exists.
 */
export class TokenEnrollment {
  constructor(private readonly o: TokenEnrollmentOptions) {}

  private async verify(tokens: string[], issuerId: string | undefined): Promise<VerifiedJwt> {
    let failure: JwtRejected | undefined
    for (const token of tokens) {
      try {
        return await this.o.verifier.verifyWithoutIdentity(token, issuerId)
      } catch (err) {
        if (!(err instanceof JwtRejected)) throw err
        failure ??= err
      }
    }
    if (!failure) throw invalidToken('missing', 'no bearer token')
    throw invalidToken(tokenKind(failure.kind), failure.reason, failure.signerId)
  }

  /** Enrolls; throws EnrollmentRefused (with the client's AppError) or a store failure. */
  async enroll(request: EnrollmentRequest): Promise<EnrollmentResult> {
    const { o } = this
    const { signer, claims: payload } = await this.verify(request.tokens, request.issuerId)
    let claims: EnrollmentClaims
    try {
      claims = enrollmentClaims(payload, signer)
    } catch (err) {
      if (err instanceof ClaimsRefused) throw invalidToken('claims', err.message, signer.id)
      throw err
    }
    const withCsr = request.csrPem !== undefined
    const why = refusal(signer, await o.policy(signer.enrollAuthPolicyId), withCsr)
    if (why) throw notAllowed(why, signer.id)
    const ca = o.ca
    if (withCsr && !ca) {
      const reason =
        'this controller has no enrollment CA (CTRL_ENROLL_CA_CERT, CTRL_ENROLL_CA_KEY)'
      const error = new AppError('COULD_NOT_PROCESS_CSR', { cause: { field: 'clientCsr', reason } })
      throw new EnrollmentRefused('csr', reason, error, signer.id)
    }
    if (await o.store.repos.identities.getByExternalId(claims.externalId))
      throw alreadyEnrolled(signer)
    const now = o.clock()
    const id = newId()
    let certificate: IssuedCertificate | undefined
    if (ca && request.csrPem !== undefined) {
      try {
        // Valid from a minute ago, as upstream: clocks of clients differ a little.
        certificate = await ca.issue(
          request.csrPem,
          id,
          new Date(now.getTime() - 60_000),
          o.certValidityMs,
        )
      } catch (err) {
        if (!(err instanceof CsrRefused)) throw err
        const cause = { field: 'clientCsr', reason: err.message }
        throw new EnrollmentRefused(
          'csr',
          err.message,
          new AppError('COULD_NOT_PROCESS_CSR', { cause }),
          signer.id,
        )
      }
    }
    const identity = await this.store(signer, claims, id, now.toISOString(), certificate, request)
    return {
      identity,
      signer,
      controllers: await o.controllers(),
      ...(certificate ? { certificate } : {}),
    }
  }

  private async store(
    signer: SignerRecord,
    claims: EnrollmentClaims,
    id: string,
    at: string,
    certificate: IssuedCertificate | undefined,
    request: EnrollmentRequest,
  ): Promise<IdentityRecord> {
    const { o } = this
    const identity: IdentityRecord = {
      id,
      name: claims.name,
      externalId: claims.externalId,
      isAdmin: false,
      isDefaultAdmin: false,
      disabled: false,
      authPolicyId: signer.enrollAuthPolicyId,
      roleAttributes: claims.roleAttributes,
      tags: {},
      createdAt: at,
      updatedAt: at,
    }
    let event: Awaited<ReturnType<AuditService['record']>>
    try {
      event = await o.store.transaction(async (tx) => {
        await tx.identities.insert(identity)
        if (certificate) {
          await tx.identities.insertCertAuthenticator({
            id: newId(),
            identityId: id,
            fingerprint: certificate.fingerprint,
            certPem: certificate.certPem,
            createdAt: at,
          })
        }
        await tx.publish({ entity: 'identity', op: 'upsert', id })
        const ctx = { actor: { id: signer.id, name: signer.name }, requestId: request.requestId }
        return o.audit.record(tx, ctx, {
          action: 'enroll',
          entityType: 'identities',
          entityId: id,
          method: certificate ? 'cert' : 'token',
        })
      })
    } catch (err) {
      // Uniqueness is the database's: of two enrollments racing for one externalId, one commits.
      const field = err instanceof AppError ? err.fieldCause?.field : undefined
      // A racing enrollment of the same subject may trip the name's index first.
      const enrolled =
        field === 'externalId' ||
        (field === 'name' &&
          (await o.store.repos.identities.getByExternalId(claims.externalId)) !== undefined)
      if (enrolled) throw alreadyEnrolled(signer)
      if (field === 'name') {
        const reason = 'another identity already has this name'
        const error = new AppError('CONFLICT', {
          cause: { field: 'name', reason, value: claims.name },
        })
        throw new EnrollmentRefused('name_taken', reason, error, signer.id)
      }
      throw err
    }
    o.audit.logged(event, { signerId: signer.id })
    o.changes.emit({ entity: 'identity', op: 'upsert', id, remote: false, record: identity })
    return identity
  }
}
