import { afterEach, describe, expect, it } from 'vitest'
import { AppError } from '../../src/errors.js'
import type { Store } from '../../src/store/contract.js'
import {
  identityRecord,
  policyRecord as policy,
  signerRecord as signer,
} from '../helpers/records.js'
import { openTestStore, PG_URL } from '../helpers/stores.js'

async function refusal(write: Promise<unknown>): Promise<AppError> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(AppError)
  return err as AppError
}

let store: Store | undefined
afterEach(async () => {
  await store?.close()
  store = undefined
})

// What two requests at once leave to the database's foreign keys: the service's checks before the
// write saw the other request's entity still there (or not yet there). The write that loses is
// answered as it would have been had it come second: 404 naming the field, or 409 for a DELETE.
describe.runIf(PG_URL)('references broken by a concurrent write, on PostgreSQL', () => {
  it('a write naming a deleted entity is 404 naming the field; deleting a referenced one is 409', async () => {
    store = await openTestStore('postgres')
    const repos = store.repos
    const allowed = await refusal(repos.policies.insert(policy('p1', { allowedSigners: ['gone'] })))
    expect(allowed).toMatchObject({
      code: 'NOT_FOUND',
      fieldCause: { field: 'primary.extJwt.allowedSigners' },
    })
    const secondary = await refusal(
      repos.policies.insert(policy('p2', { requireExtJwtSigner: 'gone' })),
    )
    expect(secondary).toMatchObject({
      code: 'NOT_FOUND',
      fieldCause: { field: 'secondary.requireExtJwtSigner' },
    })
    const identity = await refusal(
      repos.identities.insert({ ...identityRecord('alice'), authPolicyId: 'gone' }),
    )
    expect(identity).toMatchObject({ code: 'NOT_FOUND', fieldCause: { field: 'authPolicyId' } })

    await repos.signers.insert(signer('s1'))
    await repos.policies.insert(policy('p3', { allowedSigners: ['s1'] }))
    const deleted = await refusal(repos.signers.delete('s1'))
    expect(deleted).toMatchObject({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      fieldCause: { field: 'primary.extJwt.allowedSigners' },
    })
    expect(await repos.signers.get('s1')).toBeDefined() // nothing was deleted
  })

  it('a signer enrolling into a deleted policy is 404 naming enrollAuthPolicyId; deleting a policy a signer enrolls into is 409', async () => {
    store = await openTestStore('postgres')
    const repos = store.repos
    const created = await refusal(repos.signers.insert(signer('s1', 'gone')))
    expect(created).toMatchObject({
      code: 'NOT_FOUND',
      fieldCause: { field: 'enrollAuthPolicyId' },
    })
    expect(await repos.signers.get('s1')).toBeUndefined()

    await repos.policies.insert(policy('enroll-here'))
    await repos.signers.insert(signer('s2', 'enroll-here'))
    const deleted = await refusal(repos.policies.delete('enroll-here'))
    expect(deleted).toMatchObject({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      fieldCause: { field: 'enrollAuthPolicyId' },
    })
    expect(await repos.policies.get('enroll-here')).toBeDefined()

    // Checked at the commit: one unit of work may name a policy it inserts after the signer (as
    // copy-to-postgres does), or replace a policy signers enroll into.
    await store.transaction(async (tx) => {
      await tx.signers.insert(signer('s3', 'later'))
      await tx.policies.insert(policy('later', { allowedSigners: ['s3'] }))
      await tx.policies.delete('enroll-here')
      await tx.policies.insert(policy('enroll-here'))
    })
    expect((await repos.signers.get('s3'))?.enrollAuthPolicyId).toBe('later')
  })
})
