/** Error codes of the edge API that this service emits, with their HTTP status and fixed message. */
const CODES = {
  COULD_NOT_VALIDATE: [
    400,
    'The supplied request contains an invalid document or no valid accept content were available, see cause',
  ],
  COULD_NOT_PARSE_BODY: [400, 'The body of the request could not be parsed'],
  COULD_NOT_PARSE_REQUEST: [400, 'The request is not valid HTTP/1.1 and could not be parsed'],
  INVALID_PATH: [400, 'The request path could not be decoded'],
  INVALID_FIELD: [400, 'The field contains an invalid value'],
  INVALID_CERT_PEM: [
    400,
    'the supplied certificate PEM is either invalid or contains the incorrect number of certificates',
  ],
  INVALID_FILTER: [400, 'The filter query supplied is invalid'],
  INVALID_PAGINATION: [400, 'The pagination properties provided are invalid'],
  INVALID_SORT_IDENTIFIER: [400, 'The sort order supplied is invalid'],
  INVALID_AUTH_METHOD: [400, 'The supplied authentication method is not valid'],
  INVALID_ENROLLMENT_TOKEN: [400, 'The supplied token is not valid for enrollment'],
  COULD_NOT_PROCESS_CSR: [400, 'Could not process the supplied certificate signing request'],
  UNAUTHORIZED: [
    401,
    'The request could not be completed. The session is not authorized or the credentials are invalid',
  ],
  INVALID_AUTH: [401, 'The authentication request failed'],
  NOT_FOUND: [404, 'The resource requested was not found or is no longer available'],
  METHOD_NOT_ALLOWED: [405, 'The resource requested does not support this HTTP verb'],
  REQUEST_TIMEOUT: [408, 'The request was not received in time'],
  CONFLICT: [409, 'The request conflicts with the current state of the resource, see cause'],
  INVALID_ENROLLMENT_NOT_ALLOWED: [409, 'The requested enrollment is not allowed'],
  ENROLLMENT_IDENTITY_ALREADY_ENROLLED: [409, 'The identity is already enrolled'],
  CAN_NOT_DELETE_REFERENCED_ENTITY: [
    409,
    'the entity cannot be deleted because it is referenced by another entity, see cause',
  ],
  REQUEST_ENTITY_TOO_LARGE: [413, 'The request body exceeds the maximum accepted size'],
  REQUEST_URI_TOO_LONG: [414, 'A path segment of the request exceeds the maximum accepted length'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'The content type of the request body is not supported'],
  REQUEST_HEADER_TOO_LARGE: [431, 'The request head exceeds the maximum accepted size (16 KiB)'],
  RATE_LIMITED: [429, 'The requested operation is rate limited, try again later'],
  SNAPSHOT_NOT_SUPPORTED: [400, 'This store does not take snapshots'],
  UNHANDLED: [500, 'An unhandled error occurred'],
  SNAPSHOT_DIR_NOT_WRITABLE: [500, 'The snapshot folder cannot be created or written to'],
  SNAPSHOT_FAILED: [500, 'The snapshot could not be written'],
  SNAPSHOT_DISK_FULL: [507, 'The disk of the snapshot folder is full'],
  SERVICE_UNAVAILABLE: [503, 'The service is not available'],
} as const satisfies Record<string, readonly [number, string]>

export type ErrorCode = keyof typeof CODES

/** A field-level explanation of an error, as the edge API renders it. */
export interface FieldCause {
  field: string
  reason: string
  value?: string
}

export interface AppErrorOptions {
  cause?: FieldCause
  headers?: Record<string, string>
  /** Replaces the fixed message of the code when more precise wording helps the caller. */
  message?: string
}

/** The single error type of the service: a stable code, its HTTP status and an optional cause. */
export class AppError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  readonly fieldCause: FieldCause | undefined
  readonly headers: Record<string, string>

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(options.message ?? CODES[code][1])
    this.name = 'AppError'
    this.code = code
    this.statusCode = CODES[code][0]
    this.fieldCause = options.cause
    this.headers = options.headers ?? {}
  }
}

export function messageOf(code: ErrorCode): string {
  return CODES[code][1]
}

/** The text of a caught value: an Error's message, or the value itself as a string. */
export function caughtMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** Shorthand for an error that names the field at fault. */
export function fieldError(
  code: ErrorCode,
  field: string,
  reason: string,
  value?: unknown,
): AppError {
  const cause: FieldCause = { field, reason }
  if (value !== undefined && value !== null) {
    cause.value = typeof value === 'string' ? value : JSON.stringify(value)
  }
  return new AppError(code, { cause })
}
