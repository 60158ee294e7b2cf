import type { AuthPolicyRecord } from '../store/auth-policy-repository.js'
import type { IdentityRecord } from '../store/identity-repository.js'
import type { SignerRecord } from '../store/signer-repository.js'
import type { SignerKeys } from './signer-keys.js'
import {
  claimValue,
  JwtRejected,
  type VerifiedJwt,
  type VerifyOptions,
  verifyExternalJwt,
} from './verify.js'

/** How the jwt module reaches identities and policies, without knowing the store. */
export interface IdentityLookup {
  byId(id: string): IdentityRecord | undefined
  byExternalId(externalId: string): IdentityRecord | undefined
  policy(id: string): AuthPolicyRecord | undefined
}

export interface Authenticated extends VerifiedJwt {
  identity: IdentityRecord
  policy: AuthPolicyRecord
  /** Seconds since the epoch at which the token expires. */
  exp: number
}

/** Finds the identity a verified token names through the signer's claimsProperty/useExternalId. */
export function matchIdentity(verified: VerifiedJwt, lookup: IdentityLookup): IdentityRecord {
  const { signer, claims, kid } = verified
  const value = claimValue(claims, signer.claimsProperty)
  if (typeof value !== 'string' || value === '') {
    throw new JwtRejected(
      'invalid',
      `claim ${signer.claimsProperty} is not a non-empty string`,
      signer.id,
      kid,
    )
  }
  const identity = signer.useExternalId ? lookup.byExternalId(value) : lookup.byId(value)
  if (!identity) {
    const what = signer.useExternalId ? 'externalId' : 'id'
    throw new JwtRejected('invalid', `no identity with that ${what}`, signer.id, kid)
  }
  if (identity.disabled) throw new JwtRejected('invalid', 'identity is disabled', signer.id, kid)
  return identity
}

export function primaryAllowed(policy: AuthPolicyRecord, signer: SignerRecord): string | undefined {
  if (!policy.extJwtAllowed) return 'policy does not allow JWT login'
  if (policy.allowedSigners.length > 0 && !policy.allowedSigners.includes(signer.id)) {
    return 'policy does not allow this signer'
  }
  return undefined
}

/**
 * Primary authentication with an external JWT: verification, then the identity the token names,
 * then that identity's policy. Throws JwtRejected with the precise reason.
 */
export async function authenticateExternalJwt(
  token: string,
  keys: SignerKeys,
  lookup: IdentityLookup,
  options: VerifyOptions,
): Promise<Authenticated> {
  const verified = await verifyExternalJwt(token, keys, options)
  const identity = matchIdentity(verified, lookup)
  const policy = lookup.policy(identity.authPolicyId)
  const refusal = policy ? primaryAllowed(policy, verified.signer) : 'identity has no policy'
  if (refusal || !policy)
    throw new JwtRejected('invalid', refusal ?? '', verified.signer.id, verified.kid)
  return { ...verified, identity, policy, exp: verified.claims.exp as number } // requiredClaims guarantees exp
}
