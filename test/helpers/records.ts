import type { IdentityRecord } from '../../src/store/contract.js'

/** A stored identity as the store tests insert it: enabled, under the default policy. */
export function identityRecord(id: string): IdentityRecord {
  const now = new Date().toISOString()
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
