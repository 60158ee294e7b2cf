import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach } from 'vitest'
import { openDatabase } from '../../src/store/sqlite/connection.js'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js'

type StoreOptions = ConstructorParameters<typeof SqliteStore>[2]

/**
 * A directory of its own per test (named `prefix…`) with the file `ctrl.db` in it, for SQLite
 * stores on a file; every store opened or tracked through it is closed, and the directory
 * removed, after each test. Call it inside a `describe`.
 */
export function sqliteFiles(prefix: string) {
  let dir = ''
  let path = ''
  const open: SqliteStore[] = []
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix))
    path = join(dir, 'ctrl.db')
  })
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return {
    /** This test's directory. */
    get dir() {
      return dir
    },
    /** This test's database file. */
    get path() {
      return path
    },
    /** A store on `at` (this test's file by default), closed after the test. */
    open(options: StoreOptions = {}, at = path): SqliteStore {
      const db = openDatabase(at)
      return this.track(new SqliteStore(db, () => db.close(), options))
    },
    /** Closes `store` now (it is not closed again after the test). */
    async close(store: SqliteStore): Promise<void> {
      await store.close()
      open.splice(open.indexOf(store), 1)
    },
    /** Closes `store` after the test too. */
    track(store: SqliteStore): SqliteStore {
      open.push(store)
      return store
    },
  }
}
