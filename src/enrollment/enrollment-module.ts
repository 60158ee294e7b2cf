import type { AuditService } from '../audit/audit-service.js'
import type { ChangeBus } from '../changes.js'
import type { ExternalJwtVerifier } from '../jwt/authenticate.js'
import type { AuthPolicyService } from '../policies/auth-policy-service.js'
import type { Store } from '../store/contract.js'
import type { ControllerDirectory } from './controllers.js'
import type { EnrollmentCa } from './enrollment-ca.js'
import { TokenEnrollment } from './token-enrollment.js'

/** JWT enrollment and the trust bundle its answers carry. */
export function buildEnrollment(o: {
  store: Store
  changes: ChangeBus
  audit: AuditService
  verifier: ExternalJwtVerifier
  policies: AuthPolicyService
  clock: () => Date
  controllers: ControllerDirectory
  ca?: EnrollmentCa | undefined
  certValidityMs: number
}) {
  const enrollment = new TokenEnrollment({
    verifier: o.verifier,
    store: o.store,
    changes: o.changes,
    audit: o.audit,
    policy: (id) => o.policies.cached(id),
    controllers: o.controllers,
    clock: o.clock,
    ca: o.ca,
    certValidityMs: o.certValidityMs,
  })
  return { enrollment }
}
