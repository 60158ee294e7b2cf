import Database from 'better-sqlite3'
import type { IntegrityFacts } from '../contract.js'
import type { Db } from './connection.js'

/**
 * Pages copied per step of a snapshot (1 MiB at SQLite's default 4 KiB page). Between steps the
 * event loop serves requests, and a step that finds a write transaction open on the connection
 * is simply retried later (SQLite answers SQLITE_BUSY), so a snapshot never waits on a write, nor
 * a write on more than one step.
 */
const PAGES_PER_STEP = 256

/**
 * Copies `db` into the new file `path` with SQLite's online backup API. Writes made through the
 * same connection while the copy runs are carried into it, so the file holds the database as it
 * was when the last step ended. `firstStep` resolves once the first step ran (the caller holds its
 * write lock until then: a first step that met an open transaction would end the copy at once).
 */
export function backupTo(db: Db, path: string): { firstStep: Promise<void>; done: Promise<void> } {
  let started: () => void = () => {}
  const firstStep = new Promise<void>((resolve) => {
    started = resolve
  })
  const done = db
    .backup(path, {
      progress: () => {
        started()
        return PAGES_PER_STEP
      },
    })
    .then(() => undefined)
    .finally(started)
  return { firstStep, done }
}

/**
 * Copies the database file `source` (a running controller's or a stopped one's) into the new file
 * `path`, through a read-only connection of its own. Another process's writes would restart a copy
 * made in steps, so this one copies every page in one step: one read transaction, which in WAL
 * mode never blocks the controller's writes.
 */
export async function backupFile(source: string, path: string): Promise<void> {
  const db = new Database(source, { readonly: true, fileMustExist: true })
  try {
    await db.backup(path, { progress: () => 0x7fffffff })
  } finally {
    db.close()
  }
}

/** Opens a snapshot (or any database file) read-only, for checking. */
export function openReadOnly(path: string): Db {
  return new Database(path, { readonly: true, fileMustExist: true })
}

interface ForeignKeyRow {
  table: string
  rowid: number | null
  parent: string
  fkid: number
}

/** What `PRAGMA integrity_check` and `PRAGMA foreign_key_check` report, one line per problem. */
export function storageProblems(db: Db): string[] {
  const integrity = db
    .prepare<[], { integrity_check: string }>('PRAGMA integrity_check')
    .all()
    .map((r) => r.integrity_check)
    .filter((line) => line !== 'ok')
  const keys = db
    .prepare<[], ForeignKeyRow>('PRAGMA foreign_key_check')
    .all()
    .map(
      (r) =>
        `foreign key check: a row of ${r.table} (rowid ${r.rowid ?? 'none'}) names a missing row of ${r.parent}`,
    )
  return [...integrity.map((line) => `integrity check: ${line}`), ...keys]
}

interface IdentityFactRow {
  id: string
  auth_policy_id: string
  external_id: string | null
  is_admin: number
  disabled: number
}

/** The ids and references the controller's own integrity rules read. */
export function integrityFacts(db: Db): IntegrityFacts {
  const ids = (sql: string) =>
    db
      .prepare<[], { id: string }>(sql)
      .all()
      .map((r) => r.id)
  const refs = db
    .prepare<[], { policyId: string; field: string; signerId: string }>(
      `SELECT policy_id AS policyId, 'primary.extJwt.allowedSigners' AS field, signer_id AS signerId
         FROM auth_policy_signers
       UNION ALL
       SELECT id, 'secondary.requireExtJwtSigner', secondary_require_ext_jwt_signer
         FROM auth_policies WHERE secondary_require_ext_jwt_signer IS NOT NULL`,
    )
    .all()
  const identities = db
    .prepare<[], IdentityFactRow>(
      'SELECT id, auth_policy_id, external_id, is_admin, disabled FROM identities',
    )
    .all()
    .map((r) => ({
      id: r.id,
      authPolicyId: r.auth_policy_id,
      externalId: r.external_id,
      isAdmin: r.is_admin === 1,
      disabled: r.disabled === 1,
    }))
  return {
    signerIds: ids('SELECT id FROM signers'),
    policyIds: ids('SELECT id FROM auth_policies'),
    policySignerRefs: refs,
    signerEnrollPolicies: hasColumn(db, 'signers', 'enroll_auth_policy_id')
      ? db
          .prepare<[], { signerId: string; policyId: string }>(
            'SELECT id AS signerId, enroll_auth_policy_id AS policyId FROM signers',
          )
          .all()
      : [], // a file from before migration 007 (ctrl-db check reads it as it is): no such policy
    identities,
  }
}

/** Whether `table` has `column` (a snapshot checked as it is may be from an older schema). */
function hasColumn(db: Db, table: string, column: string): boolean {
  return db
    .prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
    .all()
    .some((c) => c.name === column)
}
