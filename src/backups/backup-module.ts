import type { AuditService } from '../audit/audit-service.js'
import type { Store } from '../store/contract.js'
import { IntegrityCheck } from './integrity.js'
import { SnapshotService } from './snapshot-service.js'

/** Snapshots and the integrity check of the store, as the management API offers them. */
export function buildBackups(o: {
  store: Store
  dbPath: string
  snapshotDir: string | undefined
  snapshotKeep: number
  clock: () => Date
  audit: AuditService
  log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void }
}) {
  const snapshots = new SnapshotService({
    store: o.store,
    dbPath: o.dbPath,
    dir: o.snapshotDir,
    keep: o.snapshotKeep,
    clock: o.clock,
    audit: o.audit,
    log: o.log,
  })
  const integrity = new IntegrityCheck(o.store, o.clock, o.log)
  return { snapshots, integrity, close: () => integrity.settled() }
}

export type Backups = ReturnType<typeof buildBackups>
