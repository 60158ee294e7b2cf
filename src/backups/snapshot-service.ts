import type { AuditContext, AuditService } from '../audit/audit-service.js'
import { AppError } from '../errors.js'
import type { Store } from '../store/contract.js'
import { defaultSnapshotDir, type SnapshotResult, takeSnapshot } from './snapshot.js'

export interface SnapshotServiceOptions {
  store: Store
  /** The database setting (`CTRL_DB`): a file, `:memory:` or a PostgreSQL URL. */
  dbPath: string
  /** `CTRL_SNAPSHOT_DIR`; unset: `snapshots` beside the database file. */
  dir: string | undefined
  keep: number
  clock: () => Date
  audit: AuditService
  log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void }
}

/**
 * `createDatabaseSnapshot`: one snapshot at a time (another asked for meanwhile is answered 429
 * `RATE_LIMITED` at once rather than queued: the copy it would wait for is just as fresh), logged
 * and recorded as an audit event.
 */
export class SnapshotService {
  private busy = false

  constructor(private readonly o: SnapshotServiceOptions) {}

  async take(ctx: AuditContext): Promise<SnapshotResult> {
    const { store } = this.o
    if (store.kind !== 'sqlite') {
      await store.snapshot('') // PostgreSQL refuses, naming pg_dump
    }
    const dir =
      this.o.dir ?? (this.o.dbPath === ':memory:' ? undefined : defaultSnapshotDir(this.o.dbPath))
    if (dir === undefined) {
      throw new AppError('SNAPSHOT_NOT_SUPPORTED', {
        message: 'an in-memory database has no folder for snapshots: set CTRL_SNAPSHOT_DIR',
      })
    }
    if (this.busy) throw new AppError('RATE_LIMITED', { message: 'a snapshot is being taken' })
    this.busy = true
    try {
      const result = await takeSnapshot({
        dir,
        keep: this.o.keep,
        clock: this.o.clock,
        copy: (path) => store.snapshot(path),
        log: this.o.log,
      })
      const { path, bytes, durationMs, removed } = result
      this.o.log.info({ path, bytes, durationMs, removed }, 'snapshot taken')
      const event = await store.transaction((tx) =>
        this.o.audit.record(tx, ctx, {
          action: 'snapshot',
          entityType: 'database',
          entityId: path,
          changedFields: [],
        }),
      )
      this.o.audit.logged(event, { bytes: String(bytes), durationMs: String(durationMs) })
      return result
    } finally {
      this.busy = false
    }
  }
}
