import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import { expect, onTestFinished } from 'vitest'
import { caller } from '../helpers/app.js'
import type { TestCert } from '../helpers/certs.js'

export const M = '/edge/management/v1'
export const ISSUER = 'https://idp.backup.example'

/** A temporary folder, removed when the test ends. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-backup-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A certificate signer for `cert` and an identity its tokens log in as (`alice@example.com`). */
export async function jwtFixture(app: FastifyInstance, token: string, cert: TestCert) {
  const call = caller(app, token)
  const signer = await call('POST', `${M}/external-jwt-signers`, {
    name: 'backup-idp',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    certPem: cert.certPem,
    kid: 'backup-key',
    useExternalId: true,
  })
  if (signer.statusCode !== 201) throw new Error(`signer: ${signer.body}`)
  const identity = await call('POST', `${M}/identities`, {
    name: 'alice',
    externalId: 'alice@example.com',
  })
  if (identity.statusCode !== 201) throw new Error(`identity: ${identity.body}`)
}

/** Names of everything the management lists show (limit none), by list. */
export async function listed(app: FastifyInstance, token: string) {
  const call = caller(app, token)
  const names = async (path: string) =>
    (await call('GET', `${M}/${path}?filter=${encodeURIComponent('limit none')}`))
      .json()
      .data.map((r: { id: string; name: string }) => `${r.id} ${r.name}`)
      .sort()
  return {
    signers: await names('external-jwt-signers'),
    identities: await names('identities'),
    policies: await names('auth-policies'),
  }
}

/** A signer, and a policy that names it as an allowed signer. */
export async function signerInPolicy(app: FastifyInstance, token: string) {
  const call = caller(app, token)
  const signer = await call('POST', `${M}/external-jwt-signers`, {
    name: 'named',
    enabled: true,
    issuer: 'https://named.example',
    audience: 'ziti',
    jwksEndpoint: 'https://localhost/jwks',
  })
  expect(signer.statusCode, signer.body).toBe(201)
  const primary = {
    cert: { allowed: false, allowExpiredCerts: false },
    updb: {
      allowed: true,
      minPasswordLength: 12,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 0,
      lockoutDurationMinutes: 0,
    },
    extJwt: { allowed: true, allowedSigners: [signer.json().data.id] },
  }
  const policy = await call('POST', `${M}/auth-policies`, {
    name: 'names-a-signer',
    primary,
    secondary: { requireTotp: false, requireExtJwtSigner: null },
  })
  expect(policy.statusCode, policy.body).toBe(201)
  return { signerId: signer.json().data.id as string, policyId: policy.json().data.id as string }
}

/** Deletes a signer that a policy names, with foreign keys off (as a torn copy might). */
export function plantMissingSigner(file: string, signerId: string): void {
  const db = new Database(file)
  try {
    db.pragma('foreign_keys = OFF')
    db.prepare('DELETE FROM signers WHERE id = ?').run(signerId)
  } finally {
    db.close()
  }
}
