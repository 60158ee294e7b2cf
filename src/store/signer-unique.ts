import { AppError } from '../errors.js'

/**
 * A certificate signer whose certificate another signer already has: its SHA-1 fingerprint is
 * unique among signers, as in OpenZiti (the reference's `fingerprint`, "unique when present").
 * Named by the field the client sent, as the other unique fields are.
 */
export function certificateTaken(fingerprint: string): AppError {
  return new AppError('COULD_NOT_VALIDATE', {
    cause: {
      field: 'certPem',
      reason: `another signer already has this certificate (fingerprint ${fingerprint})`,
    },
  })
}
