import type {
  AuthPolicyRecord,
  IdentityRecord,
  LoginRecord,
  SessionRecord,
  SignerRecord,
  Store,
} from '../../src/store/contract.js'

/** A stored identity as the store tests insert it: enabled, under the default policy. */
export function identityRecord(id: string, now = new Date().toISOString()): IdentityRecord {
  return {
    id,
    name: id,
    externalId: null,
    isAdmin: false,
    isDefaultAdmin: false,
    disabled: false,
    authPolicyId: 'default',
    roleAttributes: [],
    tags: {},
    createdAt: now,
    updatedAt: now,
  }
}

/** Stores an identity (as `identityRecord` makes it) for each id, in one unit of work. */
export function insertIdentities(store: Store, ...ids: string[]): Promise<void> {
  return store.transaction(async (tx) => {
    for (const id of ids) await tx.identities.insert(identityRecord(id))
  })
}

/** A stored session of `identityId` as the store tests insert it, created and expiring at `at`. */
export function sessionRecord(
  identityId: string,
  id: string,
  at = new Date().toISOString(),
  over: Partial<SessionRecord> = {},
): SessionRecord {
  return {
    id,
    tokenHash: Buffer.from(id.padEnd(32, 'x')),
    legacyToken: false,
    identityId,
    authenticatorId: 'updb',
    ipAddress: '127.0.0.1',
    createdAt: at,
    updatedAt: at,
    lastActivityAt: at,
    expiresAt: at,
    hardExpiresAt: null,
    ...over,
  }
}

/** The n-th session of an identity, created n seconds after a fixed start (the cap's order). */
export function nthSession(identityId: string, n: number): SessionRecord {
  const at = new Date(Date.UTC(2026, 10, 25, 8, 0, n)).toISOString()
  return sessionRecord(identityId, `${identityId}-${n}`, at, {
    expiresAt: '2099-01-01T00:00:00.000Z',
    hardExpiresAt: n % 2 ? at : null,
  })
}

/** A login of `session`: the session with its audit event, as the session service makes them. */
export function loginRecord(session: SessionRecord): LoginRecord {
  return {
    session,
    event: {
      id: `event-${session.id}`,
      at: session.createdAt,
      actor: { id: session.identityId, name: `name of ${session.identityId}` },
      action: 'login',
      entityType: 'api-sessions',
      entityId: session.id,
      requestId: `req-${session.id}`,
      method: 'ext-jwt',
      changedFields: [],
    },
  }
}

/** The logins of an identity's sessions numbered `ns` (see `nthSession`). */
export const logins = (identityId: string, ns: number[]): LoginRecord[] =>
  ns.map((n) => loginRecord(nthSession(identityId, n)))

/** A stored auth policy as the store tests insert it: password and JWT login, no lockout. */
export function policyRecord(
  id: string,
  over: Partial<AuthPolicyRecord> = {},
  now = new Date().toISOString(),
): AuthPolicyRecord {
  return {
    id,
    name: id,
    certAllowed: false,
    certAllowExpired: false,
    updbAllowed: true,
    updbMinPasswordLength: 12,
    updbRequireSpecialChar: false,
    updbRequireNumberChar: false,
    updbRequireMixedCase: false,
    updbMaxAttempts: 0,
    updbLockoutDurationMinutes: 0,
    extJwtAllowed: true,
    allowedSigners: [],
    requireExtJwtSigner: null,
    tags: {},
    createdAt: now,
    updatedAt: now,
    ...over,
  }
}

/** A stored JWKS signer as the store tests insert it, enabled, enrolling into `enrollAuthPolicyId`. */
export function signerRecord(
  id: string,
  enrollAuthPolicyId = 'default',
  now = new Date().toISOString(),
): SignerRecord {
  return {
    id,
    name: id,
    enabled: true,
    issuer: `https://${id}.example`,
    audience: 'ziti',
    jwksEndpoint: 'http://127.0.0.1:1/jwks',
    certPem: null,
    kid: null,
    claimsProperty: 'sub',
    useExternalId: false,
    externalAuthUrl: null,
    clientId: null,
    scopes: null,
    targetToken: 'ACCESS',
    enrollToTokenEnabled: false,
    enrollToCertEnabled: false,
    enrollNameClaimsSelector: '/sub',
    enrollAttributeClaimsSelector: null,
    enrollAuthPolicyId,
    commonName: null,
    fingerprint: null,
    notBefore: null,
    notAfter: null,
    tags: {},
    tokenRules: null,
    createdAt: now,
    updatedAt: now,
  }
}
