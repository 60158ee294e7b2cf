import { decodeJwt, decodeProtectedHeader } from 'jose'
import type { ExternalJwtVerifier } from './authenticate.js'
import { isCompactJws, JwtRejected, type RefusalKind } from './verify.js'

/** What JWT login would make of a token, and why. */
export interface TokenExplanation {
  accepted: boolean
  kind: RefusalKind | null
  reason: string | null
  signerId: string | null
  kid: string | null
  identityId: string | null
  /** The signer's token rule the token broke (`tokenRules.claims[2]`), or null. */
  rule: string | null
  /** That rule's operator note (`message`), or null. */
  ruleMessage: string | null
  /** The protected header and the claims as the token states them, trusted or not. */
  header: Record<string, unknown> | null
  claims: Record<string, unknown> | null
}

function untrusted(read: () => Record<string, unknown>): Record<string, unknown> | null {
  try {
    return read()
  } catch {
    return null
  }
}

/**
 * Runs every check of primary JWT login on a token (signer, key, signature, claims, identity,
 * policy) without logging in: no session, no cache entry. The token itself goes nowhere else.
 */
export async function explainToken(
  token: string,
  verifier: ExternalJwtVerifier,
): Promise<TokenExplanation> {
  const jws = isCompactJws(token)
  const decoded = {
    header: jws ? untrusted(() => decodeProtectedHeader(token)) : null,
    claims: jws ? untrusted(() => decodeJwt(token)) : null,
  }
  try {
    const { signer, identity, kid } = await verifier.check(token)
    const ids = { signerId: signer.id, kid, identityId: identity.id }
    const none = { kind: null, reason: null, rule: null, ruleMessage: null }
    return { accepted: true, ...none, ...ids, ...decoded }
  } catch (err) {
    if (!(err instanceof JwtRejected)) throw err
    return {
      accepted: false,
      kind: err.kind,
      reason: err.reason,
      signerId: err.signerId ?? null,
      kid: err.kid ?? null,
      identityId: err.identityId ?? null,
      rule: err.rule?.path ?? null,
      ruleMessage: err.rule?.message ?? null,
      ...decoded,
    }
  }
}
