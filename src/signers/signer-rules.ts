import { fieldError } from '../errors.js'
import { checkTokenRules, mergeTokenRules, type TokenRulesPatch } from '../jwt/token-rules-check.js'
import { applyPatch, type PatchRules } from '../resources.js'
import type { SignerRecord, TargetToken, TokenRules } from '../store/contract.js'
import { parseSignerCertificate, type SignerCertificate } from './certificate.js'

/** The fields an operator writes; everything else is derived or assigned. */
export interface SignerInput {
  name: string
  enabled: boolean
  issuer: string
  audience: string
  jwksEndpoint?: string | null
  certPem?: string | null
  kid?: string | null
  claimsProperty?: string | null
  useExternalId?: boolean | null
  externalAuthUrl?: string | null
  clientId?: string | null
  scopes?: string[] | null
  targetToken?: TargetToken | null
  enrollToTokenEnabled?: boolean | null
  enrollToCertEnabled?: boolean | null
  enrollNameClaimsSelector?: string | null
  enrollAttributeClaimsSelector?: string | null
  enrollAuthPolicyId?: string | null
  tags?: Record<string, unknown> | null
  /** Omitted on PUT: the stored rules stay (OpenZiti's tools do not know them); null clears. */
  tokenRules?: TokenRules | null
}

/** A PATCH body: every key optional, `null` clears (or resets to the default). */
export type SignerPatch = {
  [K in Exclude<keyof SignerInput, 'tokenRules'>]?: SignerInput[K] | null
} & {
  /** Merged member by member onto the stored rules; a null member removes it. */
  tokenRules?: TokenRulesPatch | null
}

export type WritableSigner = Omit<
  SignerRecord,
  'id' | 'createdAt' | 'updatedAt' | 'commonName' | 'fingerprint' | 'notBefore' | 'notAfter'
>

const REQUIRED = ['name', 'enabled', 'issuer', 'audience'] as const

/** An optional text field as stored: omitted, null and "" all mean "not set". */
function text(value: string | null | undefined): string | null {
  return value === undefined || value === '' ? null : value
}

/** A claims selector as stored: a JSON pointer (a bare claim name gets a leading `/`, as upstream). */
function pointer(value: string | null): string | null {
  return value === null || value.startsWith('/') ? value : `/${value}`
}

/** Applies defaults to a create or PUT body: omitted optional fields take their default. */
export function fromInput(input: SignerInput): WritableSigner {
  return {
    name: input.name,
    enabled: input.enabled,
    issuer: input.issuer,
    audience: input.audience,
    jwksEndpoint: text(input.jwksEndpoint),
    certPem: text(input.certPem),
    kid: text(input.kid),
    claimsProperty: text(input.claimsProperty) ?? 'sub',
    useExternalId: input.useExternalId ?? false,
    externalAuthUrl: text(input.externalAuthUrl),
    clientId: text(input.clientId),
    scopes: input.scopes ?? null,
    targetToken: input.targetToken ?? 'ACCESS',
    enrollToTokenEnabled: input.enrollToTokenEnabled ?? false,
    enrollToCertEnabled: input.enrollToCertEnabled ?? false,
    enrollNameClaimsSelector: pointer(text(input.enrollNameClaimsSelector)) ?? '/sub',
    enrollAttributeClaimsSelector: pointer(text(input.enrollAttributeClaimsSelector)),
    enrollAuthPolicyId: text(input.enrollAuthPolicyId) ?? 'default',
    tags: input.tags ?? {},
    tokenRules: input.tokenRules ?? null,
  }
}

const PATCH_RULES: PatchRules<WritableSigner> = {
  defaults: {
    claimsProperty: 'sub',
    useExternalId: false,
    targetToken: 'ACCESS',
    enrollToTokenEnabled: false,
    enrollToCertEnabled: false,
    enrollNameClaimsSelector: '/sub',
    enrollAuthPolicyId: 'default',
    tags: {},
  },
  required: REQUIRED,
}

/** Merges a PATCH body onto the stored signer: only present keys change; `null` clears. */
export function applySignerPatch(current: WritableSigner, patch: SignerPatch): WritableSigner {
  // fromInput reads "" as "not set", as it does for create and PUT.
  const { tokenRules, ...rest } = patch
  const next = fromInput(applyPatch(fromInput(current), rest, PATCH_RULES))
  if (tokenRules === null) next.tokenRules = null
  else if (tokenRules !== undefined)
    next.tokenRules = mergeTokenRules(current.tokenRules, tokenRules)
  return next
}

/**
 * An absolute http or https URL with a host. `code`: the JWKS endpoint's refusal is OpenZiti's
 * `INVALID_FIELD`, as its address policy's (a `file:` URL included); other URLs' is
 * `COULD_NOT_VALIDATE`.
 */
function checkUrl(
  field: string,
  value: string | null,
  code: 'INVALID_FIELD' | 'COULD_NOT_VALIDATE' = 'COULD_NOT_VALIDATE',
): void {
  if (value === null) return
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw fieldError(code, field, 'must be an absolute http or https URL', value)
  }
}

/** A name, issuer or audience of only spaces would show as nothing and match no real token. */
function checkNotBlank(field: string, value: string): void {
  if (value.trim() === '') throw fieldError('COULD_NOT_VALIDATE', field, 'must not be blank', value)
}

/** RFC 6901: `~` must be followed by 0 or 1. */
function checkPointer(field: string, value: string | null): void {
  if (value?.startsWith('/') && /~(?![01])/.test(value)) {
    throw fieldError('COULD_NOT_VALIDATE', field, 'not a valid JSON pointer', value)
  }
}

/**
 * Checks a signer as it would be stored (after defaults or a PATCH merge) and derives its
 * certificate details. Throws AppError with the field at fault.
 */
export function checkSigner(s: WritableSigner): SignerCertificate | undefined {
  checkNotBlank('name', s.name)
  checkNotBlank('issuer', s.issuer)
  checkNotBlank('audience', s.audience)
  checkUrl('jwksEndpoint', s.jwksEndpoint, 'INVALID_FIELD')
  checkUrl('externalAuthUrl', s.externalAuthUrl)
  checkPointer('claimsProperty', s.claimsProperty)
  checkPointer('enrollNameClaimsSelector', s.enrollNameClaimsSelector)
  checkPointer('enrollAttributeClaimsSelector', s.enrollAttributeClaimsSelector)
  // Upstream accepts this and creates identities whose tokens can never log them in.
  if (s.enrollToTokenEnabled && !s.useExternalId) {
    throw fieldError(
      'COULD_NOT_VALIDATE',
      'useExternalId',
      'must be true with enrollToTokenEnabled: enrolled identities are found by externalId',
    )
  }
  checkTokenRules(s.tokenRules)
  if (s.jwksEndpoint !== null && s.certPem !== null) {
    throw fieldError(
      'INVALID_FIELD',
      'jwksEndpoint',
      'only one of jwksEndpoint or certPem may be set',
    )
  }
  if (s.jwksEndpoint === null && s.certPem === null) {
    throw fieldError(
      'INVALID_FIELD',
      'certPem',
      'either jwksEndpoint or certPem and kid is required',
    )
  }
  if (s.jwksEndpoint !== null && s.kid !== null) {
    throw fieldError(
      'INVALID_FIELD',
      'kid',
      'kid is only used with certPem; a JWKS provides its kids',
    )
  }
  if (s.certPem !== null && s.kid === null) {
    throw fieldError('INVALID_FIELD', 'kid', 'kid is required with certPem')
  }
  if (s.certPem === null) return undefined
  return parseSignerCertificate(s.certPem)
}
