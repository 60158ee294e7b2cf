import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignerService } from '../src/signers/signer-service.js'
import { openDatabase } from '../src/store/db.js'

/** Signer list queries on a store of 100,000 signers, in milliseconds per query (list + count). */
export function benchLists100k(): void {
  const dir = mkdtempSync(join(tmpdir(), 'ctrl-bench-100k-'))
  const db = openDatabase(join(dir, 'lists.db'))
  const signers = new SignerService({ db, clock: () => new Date() })
  db.transaction(() => {
    for (let i = 0; i < 100_000; i++) {
      signers.create({
        name: `signer-${i}-${i % 7 === 0 ? 'corp' : 'org'}`,
        enabled: i % 3 !== 0,
        issuer: `https://idp-${i}.example`,
        audience: 'ziti',
        jwksEndpoint: `https://idp-${i}.example/jwks`,
        externalAuthUrl: i % 2 ? `https://idp-${i}.example/auth` : null,
      })
    }
  })()
  const time = (params: { filter?: string; sort?: string }) => {
    const start = performance.now()
    let total = 0
    for (let i = 0; i < 20; i++) total = signers.list({ ...params, limit: '10' }).totalCount
    return { ms: (performance.now() - start) / 20, total }
  }
  time({ filter: 'name = "signer-500-org"' }) // warm the statement cache and pages first
  const baseline = time({ filter: 'name = "signer-500-org"' })
  console.log('signer lists at 100,000 signers (limit 10, with totalCount), ms per query:')
  for (const params of [
    { filter: 'name = "signer-500-org"' },
    { filter: 'enabled = true', sort: 'name asc' },
    { filter: 'enabled = true', sort: 'createdAt desc' },
    { filter: 'issuer contains "idp-4242"', sort: 'name asc' },
    { filter: 'name icontains "SIGNER-4242-"' },
    { filter: 'name contains "corp" and enabled = true', sort: 'name asc' },
    { sort: 'createdAt desc' },
  ]) {
    const r = time(params)
    const label = `${params.filter ?? '(no filter)'}${params.sort ? `, sort ${params.sort}` : ''}`
    console.log(
      `  ${label.padEnd(52)} ${r.ms.toFixed(2).padStart(7)} ms  ${String(r.total).padStart(6)} matches  ratio ${(r.ms / baseline.ms).toFixed(1)} of name =`,
    )
  }
  db.close()
  rmSync(dir, { recursive: true, force: true })
}
