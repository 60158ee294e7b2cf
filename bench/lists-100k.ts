import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ChangeBus } from '../src/changes.js'
import { SignerService } from '../src/signers/signer-service.js'
import { openStore } from '../src/store/open-store.js'

const quiet = { info: () => {}, warn: () => {} }

/**
 * Signer list queries on a store of 100,000 signers, in milliseconds per query (list + count), on
 * a SQLite file, or on PostgreSQL when `db` is a postgres:// URL (of a database the bench owns).
 */
export async function benchLists100k(db?: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-100k-'))
  const store = await openStore(
    {
      db: db ?? join(dir, 'lists.db'),
      poolSize: 4,
      connectTimeoutMs: 5000,
      statementTimeoutMs: 60_000,
    },
    quiet,
    async () => {},
  )
  const signers = new SignerService({ store, changes: new ChangeBus(), clock: () => new Date() })
  const now = new Date().toISOString()
  for (let start = 0; start < 100_000; start += 1000) {
    await store.transaction(async (tx) => {
      for (let i = start; i < start + 1000; i++) {
        await tx.signers.insert({
          id: `sig${String(i).padStart(6, '0')}`,
          name: `signer-${i}-${i % 7 === 0 ? 'corp' : 'org'}`,
          enabled: i % 3 !== 0,
          issuer: `https://idp-${i}.example`,
          audience: 'ziti',
          jwksEndpoint: `https://idp-${i}.example/jwks`,
          certPem: null,
          kid: null,
          claimsProperty: 'sub',
          useExternalId: false,
          externalAuthUrl: i % 2 ? `https://idp-${i}.example/auth` : null,
          clientId: null,
          scopes: null,
          targetToken: 'ACCESS',
          enrollToTokenEnabled: false,
          enrollToCertEnabled: false,
          enrollNameClaimsSelector: '/sub',
          enrollAttributeClaimsSelector: null,
          enrollAuthPolicyId: 'default',
          commonName: null,
          fingerprint: null,
          notBefore: null,
          notAfter: null,
          tags: {},
          tokenRules: null,
          createdAt: now,
          updatedAt: now,
        })
      }
    })
  }
  const time = async (params: { filter?: string; sort?: string }) => {
    const start = performance.now()
    let total = 0
    for (let i = 0; i < 20; i++) total = (await signers.list({ ...params, limit: '10' })).totalCount
    return { ms: (performance.now() - start) / 20, total }
  }
  await time({ filter: 'name = "signer-500-org"' }) // warm the statement cache and pages first
  const baseline = await time({ filter: 'name = "signer-500-org"' })
  console.log(
    `signer lists at 100,000 signers on ${store.kind} (limit 10, with totalCount), ms per query:`,
  )
  for (const params of [
    { filter: 'name = "signer-500-org"' },
    { filter: 'enabled = true', sort: 'name asc' },
    { filter: 'enabled = true', sort: 'createdAt desc' },
    { filter: 'issuer contains "idp-4242"', sort: 'name asc' },
    { filter: 'name icontains "SIGNER-4242-"' },
    { filter: 'name contains "corp" and enabled = true', sort: 'name asc' },
    { sort: 'createdAt desc' },
  ]) {
    const r = await time(params)
    const label = `${params.filter ?? '(no filter)'}${params.sort ? `, sort ${params.sort}` : ''}`
    console.log(
      `  ${label.padEnd(52)} ${r.ms.toFixed(2).padStart(7)} ms  ${String(r.total).padStart(6)} matches  ratio ${(r.ms / baseline.ms).toFixed(1)} of name =`,
    )
  }
  await store.close()
  rmSync(dir, { recursive: true, force: true })
}
