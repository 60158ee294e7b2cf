import { controlCharAt, hasLoneSurrogate } from '../control-chars.js'
import type { AuthPolicyRecord, IdentityRecord, SignerRecord } from '../store/contract.js'
import { hasWhitespace } from './challenge.js'
import type { SignerKeys } from './signer-keys.js'
import { compileRules } from './token-rules.js'
import { type VerifiedEntry, VerifiedTokenCache } from './verified-cache.js'
import {
  type ChallengeError,
  claimValue,
  JwtRejected,
  type RefusalKind,
  type VerifiedJwt,
  type VerifyOptions,
  verifyExternalJwt,
} from './verify.js'

/** How the jwt module reaches identities and policies, without knowing the store. */
export interface IdentityLookup {
  byId(id: string): Promise<IdentityRecord | undefined>
  byExternalId(externalId: string): Promise<IdentityRecord | undefined>
  policy(id: string): Promise<AuthPolicyRecord | undefined>
  /** True while changes may have been missed: the verified-token cache is not trusted then. */
  stale(): boolean
}

/** A token that passed every check of its signer and names an enabled identity. */
export interface Matched {
  signer: SignerRecord
  identity: IdentityRecord
  kid: string
  /** The token's `exp`, in seconds. */
  exp: number
}

export interface Authenticated extends Matched {
  policy: AuthPolicyRecord
  /** When the signer's `sessionEndsWithToken` holds: the latest the API session may last. */
  sessionEndsAt: Date | undefined
}

/** What a client needs to know of the signer whose token it still has to present. */
export type RequiredSigner = Pick<
  SignerRecord,
  'id' | 'issuer' | 'externalAuthUrl' | 'clientId' | 'scopes'
>

/** Why a secondary factor is unmet, as a stable label: a refusal kind, or a valid token of another identity. */
export type SecondaryKind = RefusalKind | 'other_identity'

/** The outcome of the secondary-factor check for one request. */
export type SecondaryResult =
  | { met: true }
  | {
      met: false
      signer: RequiredSigner
      error: ChallengeError
      kind: SecondaryKind
      reason: string
    }

/** Finds the identity a verified token names through the signer's claimsProperty/useExternalId. */
async function matchIdentity(
  verified: VerifiedJwt,
  lookup: IdentityLookup,
): Promise<IdentityRecord> {
  const { signer, claims, kid } = verified
  const value = claimValue(claims, signer.claimsProperty)
  if (typeof value !== 'string' || value === '') {
    throw new JwtRejected(
      'no_identity',
      `claim ${signer.claimsProperty} is not a non-empty string`,
      signer.id,
      kid,
    )
  }
  // No id or externalId holds a control character or a lone surrogate (requests refuse them;
  // PostgreSQL cannot even compare a NUL, and compares a lone surrogate as U+FFFD, matching an
  // identity the claim does not name): such a claim names no identity, and is not looked up.
  const identity =
    controlCharAt(value, '') >= 0 || hasLoneSurrogate(value)
      ? undefined
      : await (signer.useExternalId ? lookup.byExternalId(value) : lookup.byId(value))
  if (!identity) {
    const what = signer.useExternalId ? 'externalId' : 'id'
    throw new JwtRejected('no_identity', `no identity with that ${what}`, signer.id, kid)
  }
  if (identity.disabled) {
    throw new JwtRejected('identity_disabled', 'identity is disabled', signer.id, kid, {
      identityId: identity.id,
    })
  }
  return identity
}

function primaryRefusal(policy: AuthPolicyRecord, signer: SignerRecord): string | undefined {
  if (!policy.extJwtAllowed) return 'policy does not allow JWT login'
  if (policy.allowedSigners.length > 0 && !policy.allowedSigners.includes(signer.id)) {
    return 'policy does not allow this signer'
  }
  return undefined
}

/** The secondary factor met (shared: nothing changes a result). */
const MET: { met: true } = Object.freeze({ met: true })

/**
 * Verifies external JWTs and matches them to identities. A token that passed once is remembered
 * (by hash) until it expires, so repeating it costs no signature check; the cache is emptied for a
 * signer, identity or policy when that changes.
 */
export class ExternalJwtVerifier {
  /** Signature verifications run, and requests answered from the cache instead. */
  readonly stats = { verified: 0, cacheHits: 0 }

  constructor(
    readonly keys: SignerKeys,
    private readonly lookup: IdentityLookup,
    private readonly options: VerifyOptions,
    readonly cache: VerifiedTokenCache,
  ) {}

  /** Verification and identity match, from the cache when the token was verified before. */
  async match(
    token: string,
    expectedSignerId?: string,
    /** The identity the caller already read (the session's): a cache hit naming it needs no read. */
    known?: IdentityRecord,
  ): Promise<Matched> {
    const key = VerifiedTokenCache.key(token)
    const hit = this.lookup.stale() ? undefined : this.cache.get(key)
    if (hit) {
      const identity = known?.id === hit.identityId ? known : await this.lookup.byId(hit.identityId)
      const matched = this.fromCache(hit, identity, expectedSignerId)
      if (matched) return matched
    }
    this.stats.verified++
    // Before the check reads the signer and the identity: a change during it leaves it unremembered.
    const generation = this.cache.generation
    const verified = await verifyExternalJwt(token, this.keys, this.options, expectedSignerId)
    const identity = await matchIdentity(verified, this.lookup)
    const exp = verified.claims.exp as number // exp is required
    // Never one with whitespace, which no bearer token holds: secondaryKept's quick parse of the
    // headers relies on it (bearerCandidates).
    if (!hasWhitespace(token))
      this.cache.set(
        key,
        {
          signerId: verified.signer.id,
          identityId: identity.id,
          kid: verified.kid,
          exp,
          expiresAtMs: verified.reusableUntilMs,
        },
        generation,
      )
    return { signer: verified.signer, identity, kid: verified.kid, exp }
  }

  /**
   * A verification remembered for this token, as `match` gives it: undefined when its signer is
   * gone or disabled, or its identity gone or disabled (the token is then checked again).
   */
  private fromCache(
    hit: VerifiedEntry,
    identity: IdentityRecord | undefined,
    expectedSignerId: string | undefined,
  ): Matched | undefined {
    const signer = this.keys.getById(hit.signerId)?.signer
    if (!signer?.enabled || !identity || identity.disabled) return undefined
    if (expectedSignerId !== undefined && signer.id !== expectedSignerId) {
      throw new JwtRejected(
        'policy',
        'token is from another signer than the policy requires',
        signer.id,
        hit.kid,
      )
    }
    this.stats.cacheHits++
    return { signer, identity, kid: hit.kid, exp: hit.exp }
  }

  /** The primary policy check: the identity's policy allows JWT login with this signer. */
  private async allowPrimary(matched: Matched): Promise<Authenticated> {
    const { signer, identity, kid, exp } = matched
    const policy = await this.lookup.policy(identity.authPolicyId)
    const refusal = policy ? primaryRefusal(policy, signer) : 'identity has no policy'
    if (refusal || !policy) {
      throw new JwtRejected('policy', refusal ?? '', signer.id, kid, { identityId: identity.id })
    }
    const ends = compileRules(signer).sessionEndsWithToken
    // Field by field: a spread with more fields takes V8's slow path for object literals.
    return {
      signer,
      identity,
      kid,
      exp,
      policy,
      sessionEndsAt: ends ? new Date(exp * 1000) : undefined,
    }
  }

  /**
   * Every check of primary JWT login on one token, for explaining it: neither reads nor fills the
   * verified-token cache, so login behaves as if this call never happened. Throws JwtRejected.
   */
  async check(token: string): Promise<Authenticated> {
    const verified = await verifyExternalJwt(token, this.keys, this.options)
    const identity = await matchIdentity(verified, this.lookup)
    const { signer, kid } = verified
    return this.allowPrimary({ signer, identity, kid, exp: verified.claims.exp as number }) // required
  }

  /**
   * Every check of JWT login except the identity match (JWT enrollment, whose token names an
   * identity that does not exist yet); `signerId` pins the signer. Never uses the cache.
   */
  verifyWithoutIdentity(token: string, signerId?: string): Promise<VerifiedJwt> {
    return verifyExternalJwt(token, this.keys, this.options, signerId)
  }

  /** Primary authentication: the first token that matches an identity whose policy allows it. */
  async authenticate(tokens: string[]): Promise<Authenticated> {
    let failure: JwtRejected | undefined
    for (const token of tokens) {
      try {
        // Awaited here, so a policy refusal of this token moves on to the next one.
        return await this.allowPrimary(await this.match(token))
      } catch (err) {
        if (!(err instanceof JwtRejected)) throw err
        if (!failure || (err.error === 'expired' && failure.error !== 'expired')) failure = err
      }
    }
    throw failure ?? new JwtRejected('missing', 'no bearer token')
  }

  /**
   * The secondary factor met without waiting: one of the tokens was verified before, for this
   * identity and the required signer, and both are still enabled (what `secondary` would find in
   * the verified-token cache). Undefined in every other case: `secondary` then decides. The tokens
   * may be the request's bearerCandidates: only a token verified before can meet it here.
   */
  secondaryKept(
    tokens: string[],
    identity: IdentityRecord,
    signerId: string,
    /** The cache key of a token (its hash), when the caller knows a quicker way to it. */
    keyOf: (token: string) => string = VerifiedTokenCache.key,
  ): { met: true } | undefined {
    if (this.lookup.stale()) return undefined
    for (const token of tokens) {
      const hit = this.cache.get(keyOf(token))
      if (hit?.identityId !== identity.id || hit.signerId !== signerId) continue
      if (this.fromCache(hit, identity, signerId)) return MET
    }
    return undefined
  }

  /**
   * The secondary factor: one of the tokens must come from the policy's required signer and name
   * this very identity.
   */
  async secondary(
    tokens: string[],
    identity: IdentityRecord,
    signerId: string,
  ): Promise<SecondaryResult> {
    // Policies keep their signers from being deleted, so the signer is always known here.
    const signer: RequiredSigner = this.keys.getById(signerId)?.signer ?? {
      id: signerId,
      issuer: '',
      externalAuthUrl: null,
      clientId: null,
      scopes: null,
    }
    let error: ChallengeError = 'missing'
    let kind: SecondaryKind = 'missing'
    let reason = 'no bearer token'
    for (const token of tokens) {
      try {
        const matched = await this.match(token, signerId, identity)
        if (matched.identity.id === identity.id) return { met: true }
        error = 'invalid'
        kind = 'other_identity'
        reason = 'token names another identity'
      } catch (err) {
        if (!(err instanceof JwtRejected)) throw err
        // A token of another issuer is not a token for this signer at all (the primary one, say,
        // at a login whose policy requires a second provider): as upstream, it leaves `missing`,
        // which tells the client to fetch the required signer's token.
        if (err.kind === 'unknown_issuer' || err.signerId !== signerId) {
          if (kind === 'missing') reason = 'no token of the required signer'
          continue
        }
        if (error !== 'expired') {
          error = err.error
          kind = err.kind
          reason = err.reason
        }
      }
    }
    return { met: false, signer, error, kind, reason }
  }
}
