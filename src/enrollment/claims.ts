import type { JWTPayload } from 'jose'
import { controlCharAt, hasLoneSurrogate } from '../control-chars.js'
import { claimValue } from '../jwt/verify.js'
import type { SignerRecord } from '../store/contract.js'

/** What a verified token says the enrolled identity is: its externalId, name and attributes. */
export interface EnrollmentClaims {
  externalId: string
  name: string
  roleAttributes: string[]
}

/** Why the claims cannot make an identity (for the log; the client gets INVALID_ENROLLMENT_TOKEN). */
export class ClaimsRefused extends Error {
  override name = 'ClaimsRefused'
}

function nonEmpty(claims: JWTPayload, pointer: string, what: string, max: number): string {
  const value = claimValue(claims, pointer)
  if (typeof value !== 'string' || value === '') {
    throw new ClaimsRefused(`claim ${pointer} (${what}) is not a non-empty string`)
  }
  // The limits an operator's identity create has.
  if (value.length > max) {
    throw new ClaimsRefused(`claim ${pointer} (${what}) is over ${max} characters`)
  }
  refuseUnstorableChars(value, pointer, what)
  return value
}

/**
 * A control character is refused here as in every request body (issue 29): it garbles listings;
 * so is a lone surrogate, which no store keeps as it is.
 */
function refuseUnstorableChars(value: string, pointer: string, what: string): void {
  if (controlCharAt(value) >= 0) {
    throw new ClaimsRefused(`claim ${pointer} (${what}) holds a control character`)
  }
  if (hasLoneSurrogate(value)) {
    throw new ClaimsRefused(`claim ${pointer} (${what}) holds a lone UTF-16 surrogate`)
  }
}

// The limits of an identity's roleAttributes in a management request (identities/schemas.ts).
const MAX_ATTRIBUTES = 100
const MAX_ATTRIBUTE_LENGTH = 255

/**
 * Role attributes from the signer's attribute selector: unset, absent or null give none; a string
 * gives one (`""` none); an array of strings gives those without the empty ones; anything else
 * (a number, an object, an array holding a non-string) is refused, and so are more attributes, or
 * longer ones, than an operator's own identity update may send (the console sends them back).
 */
function attributes(claims: JWTPayload, pointer: string | null): string[] {
  if (pointer === null) return []
  const value = claimValue(claims, pointer)
  if (value === undefined || value === null) return []
  let names: string[]
  if (typeof value === 'string') names = value === '' ? [] : [value]
  else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    names = [...new Set(value.filter((v) => v !== ''))]
  } else {
    throw new ClaimsRefused(
      `claim ${pointer} (attributes) is neither a string nor an array of strings`,
    )
  }
  for (const name of names) {
    refuseUnstorableChars(name, pointer, 'attributes')
    // Counted in code points, as the update's schema counts them.
    if ([...name].length > MAX_ATTRIBUTE_LENGTH) {
      throw new ClaimsRefused(
        `claim ${pointer} (attributes) holds one over ${MAX_ATTRIBUTE_LENGTH} characters`,
      )
    }
  }
  if (names.length > MAX_ATTRIBUTES) {
    throw new ClaimsRefused(`claim ${pointer} (attributes) holds over ${MAX_ATTRIBUTES} attributes`)
  }
  return names
}

/** Reads the enrollment claims a signer selects from a verified token; throws ClaimsRefused. */
export function enrollmentClaims(claims: JWTPayload, signer: SignerRecord): EnrollmentClaims {
  const property = signer.claimsProperty
  return {
    externalId: nonEmpty(claims, property, 'externalId', 1024),
    name: nonEmpty(claims, signer.enrollNameClaimsSelector, 'name', 255),
    roleAttributes: attributes(claims, signer.enrollAttributeClaimsSelector),
  }
}
