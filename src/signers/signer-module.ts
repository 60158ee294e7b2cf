import type { AuditService } from '../audit/audit-service.js'
import type { ChangeBus } from '../changes.js'
import { JwksFetcher, type Resolver } from '../jwt/jwks-fetch.js'
import { discoverSigner } from '../jwt/oidc-discovery.js'
import { SignerKeys } from '../jwt/signer-keys.js'
import { urlRefusal } from '../jwt/ssrf-policy.js'
import type { Store } from '../store/contract.js'
import { SignerService } from './signer-service.js'

/** Signers, the keys of each (fetched from JWKS endpoints or taken from certificates), and discovery. */
export async function buildSigners(o: {
  store: Store
  changes: ChangeBus
  clock: () => Date
  audit: AuditService
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }
  fetchPolicy: { allowHttp: boolean; blockPrivate: boolean }
  jwksCooldownMs: number
  jwksMaxAgeMs: number
  jwksFetchTimeoutMs?: number | undefined
  resolver?: Resolver | undefined
}) {
  const { store, clock, fetchPolicy } = o
  const signers = new SignerService({
    store,
    changes: o.changes,
    clock,
    audit: o.audit,
    jwksUrlCheck: (url) => urlRefusal(url, fetchPolicy),
  })
  const fetcher = new JwksFetcher({
    policy: fetchPolicy,
    timeoutMs: o.jwksFetchTimeoutMs ?? 5000,
    ...(o.resolver ? { resolver: o.resolver } : {}),
  })
  const repo = store.repos.signers
  const keys = new SignerKeys({
    fetcher,
    clock,
    cooldownMs: o.jwksCooldownMs,
    maxAgeMs: o.jwksMaxAgeMs,
    log: o.log,
    source: {
      byId: (id) => repo.get(id),
      byIssuer: (issuer) => repo.getByIssuer(issuer),
      all: () => repo.all(),
      stale: () => store.stale,
    },
  })
  keys.load(await repo.all())
  return {
    signers,
    keys,
    /** Key status of this instance, and refresh-keys (this instance now, every other one told). */
    signerKeys: {
      status: (id: string) => keys.status(id),
      refresh: async (id: string) => {
        const status = await keys.refresh(id)
        if (status) {
          await store.transaction((tx) => tx.publish({ entity: 'signer-keys', op: 'refresh', id }))
        }
        return status
      },
    },
    discover: (issuer: string) => discoverSigner(issuer, fetcher, fetchPolicy),
    close: async () => {
      keys.close()
      await fetcher.close()
    },
  }
}
