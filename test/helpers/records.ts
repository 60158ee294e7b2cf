import type { IdentityRecord, SessionRecord } from '../../src/store/contract.js'

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
