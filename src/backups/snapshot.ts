import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { AppError, caughtMessage } from '../errors.js'

/** A snapshot file as `takeSnapshot` wrote it. */
export interface SnapshotResult {
  path: string
  bytes: number
  durationMs: number
  /** Older snapshots removed to keep `keep`. */
  removed: string[]
}

export interface SnapshotOptions {
  /** The folder snapshots go to (created if missing). */
  dir: string
  /** Snapshots kept in `dir`, this one included; the oldest go once a new one is written. */
  keep: number
  clock: () => Date
  /** Writes a consistent copy of the database to the new file it is given. */
  copy: (path: string) => Promise<void>
  /** Told why a snapshot failed (the answer carries only the code). */
  log: { error(obj: object, msg: string): void }
}

const NAME = /^controller-\d{8}T\d{9}Z(?:-\d+)?\.db$/

/** `controller-20261125T043012345Z.db`: UTC, sortable, without colons (valid on every disk). */
export function snapshotName(at: Date): string {
  return `controller-${at.toISOString().replace(/[-:.]/g, '')}.db`
}

/** The default folder: `snapshots` beside the database file. */
export function defaultSnapshotDir(dbPath: string): string {
  return join(dirname(resolve(dbPath)), 'snapshots')
}

/** Which failure this was, as the code an operator can act on; the reason goes to the log. */
export function snapshotError(err: unknown): AppError {
  if (err instanceof AppError) return err
  const code = (err as { code?: unknown } | null)?.code // fs and SQLite errors carry a code
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL') {
    return new AppError('SNAPSHOT_DISK_FULL')
  }
  const unwritable = ['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'SQLITE_CANTOPEN']
  if (typeof code === 'string' && (unwritable.includes(code) || code === 'SQLITE_READONLY')) {
    return new AppError('SNAPSHOT_DIR_NOT_WRITABLE')
  }
  // better-sqlite3 checks the folder itself and throws a plain TypeError when it is missing.
  if (err instanceof TypeError && /directory/.test(caughtMessage(err))) {
    return new AppError('SNAPSHOT_DIR_NOT_WRITABLE')
  }
  return new AppError('SNAPSHOT_FAILED')
}

function freeName(dir: string, at: Date): string {
  const base = snapshotName(at)
  let name = base
  for (let n = 2; existsSync(join(dir, name)); n++) name = base.replace(/\.db$/, `-${n}.db`)
  return join(dir, name)
}

/** Snapshot files of `dir`, oldest first. */
export function listSnapshots(dir: string): string[] {
  const files = readdirSync(dir)
    .filter((n) => NAME.test(n))
    .map((n) => ({ path: join(dir, n), mtime: statSync(join(dir, n)).mtimeMs }))
  // Names sort by time; the modification time orders two taken in the same millisecond.
  files.sort((a, b) => a.path.localeCompare(b.path) || a.mtime - b.mtime)
  return files.map((f) => f.path)
}

function removePartial(path: string): void {
  for (const p of [path, `${path}-journal`, `${path}-wal`, `${path}-shm`])
    rmSync(p, { force: true })
}

/**
 * Writes a snapshot into `o.dir` under a temporary name, renames it once complete (a file with the
 * final name is always whole), then removes the oldest beyond `o.keep`. On failure the partial file
 * is removed and an AppError names the cause; the database itself is only read.
 */
export async function takeSnapshot(o: SnapshotOptions): Promise<SnapshotResult> {
  const started = performance.now()
  let partial: string | undefined
  let path: string
  try {
    // A snapshot holds what the database does (password hashes among it): its owner's only,
    // whatever the umask (a folder made here too; one that was there keeps its mode).
    mkdirSync(o.dir, { recursive: true, mode: 0o700 })
    if (!statSync(o.dir).isDirectory()) throw Object.assign(new Error(o.dir), { code: 'ENOTDIR' })
    path = freeName(o.dir, o.clock())
    partial = `${path}.partial`
    removePartial(partial)
    writeFileSync(partial, '', { mode: 0o600, flag: 'wx' }) // the copy writes into it
    await o.copy(partial)
    chmodSync(partial, 0o600)
    renameSync(partial, path)
  } catch (err) {
    if (partial) removePartial(partial)
    const error = snapshotError(err)
    o.log.error({ dir: o.dir, code: error.code, reason: caughtMessage(err) }, 'snapshot failed')
    throw error
  }
  const bytes = statSync(path).size
  const removed = listSnapshots(o.dir).slice(0, -o.keep)
  for (const old of removed) rmSync(old, { force: true })
  return { path, bytes, durationMs: Math.round(performance.now() - started), removed }
}
