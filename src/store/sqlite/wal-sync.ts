import { closeSync, fdatasync, openSync } from 'node:fs'

/** Flushes a file's data to disk; resolves once it is there. */
export type SyncFile = (fd: number) => Promise<void>

/** fdatasync(2) on libuv's thread pool: the event loop goes on meanwhile. */
export const fdatasyncOffLoop: SyncFile = (fd) =>
  new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())))

/**
 * A file database's write-ahead log, synced to disk off the event loop.
 *
 * With `synchronous = FULL` a commit returns only once SQLite has synced the WAL: the whole process
 * waits for the disk (a quarter of a millisecond on a fast virtual disk, milliseconds on network
 * block storage), every other request with it. A login batch instead commits with `synchronous =
 * NORMAL` (its pages reach the WAL file, not yet the disk), leaves the lock, and is acknowledged
 * only once `flush` has synced the WAL: what a client is told is stored is on disk, as with FULL,
 * while the next requests run. A crash of the process alone loses nothing (the pages are in the
 * kernel's cache); a power cut may lose a batch that was never acknowledged.
 *
 * The file stays open while the database is: SQLite keeps its WAL (same inode) until the last
 * connection closes. A sync that fails is never retried: the kernel may have dropped the pages it
 * could not write, so a second sync could succeed without them (the store then refuses all work,
 * see SqliteStore).
 */
export class WalSync {
  private fd: number | undefined
  /** The WAL could not be opened, or the database closed: batches sync on commit. */
  private unusable = false

  constructor(
    private readonly path: string,
    private readonly syncFile: SyncFile = fdatasyncOffLoop,
  ) {}

  /** Whether batches may commit without a sync and call `flush`: the WAL is open (opened now). */
  usable(): boolean {
    if (this.unusable) return false
    if (this.fd !== undefined) return true
    try {
      this.fd = openSync(this.path, 'r')
      return true
    } catch {
      // No WAL where it should be: SQLite syncs on commit, as before.
      this.unusable = true
      return false
    }
  }

  /**
   * Syncs the WAL: everything committed before the call is on disk once it resolves. Flushes settle
   * in the order they were called, and one fails when an earlier one failed: a batch whose own sync
   * ended first may sit in the WAL behind an earlier batch whose pages never reached the disk, and
   * recovery stops at those (the WAL's checksums chain), so it is not on disk either.
   */
  async flush(): Promise<void> {
    const fd = this.fd
    if (fd === undefined || this.unusable) throw new Error('the WAL is not open')
    this.syncing++
    const earlier = this.last
    const own = this.syncFile(fd).then(() => earlier)
    this.last = own
    try {
      await own
    } finally {
      this.syncing--
      if (this.syncing === 0 && this.unusable) this.release()
    }
  }

  /**
   * No more syncs. The file itself is closed once the syncs in flight end: closed under them, its
   * descriptor could be reused by another file before a pool thread syncs it, and that sync would
   * then report another file's success.
   */
  close(): void {
    this.unusable = true
    if (this.syncing === 0) this.release()
  }

  private syncing = 0
  /** The latest flush: the next one settles after it, and fails with it. */
  private last: Promise<void> = Promise.resolve()

  private release(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}
