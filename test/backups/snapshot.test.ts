import { copyFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_PASSWORD, buildTestApp, caller, login, testClock } from '../helpers/app.js'
import { makeCert, type TestCert } from '../helpers/certs.js'
import { signJwt } from '../helpers/jwt.js'
import { PG_URL } from '../helpers/stores.js'
import { ISSUER, jwtFixture, listed, M, tempDir } from './fixtures.js'

const SNAPSHOT = `${M}/database/snapshot`

let cert: TestCert
beforeAll(async () => {
  cert = await makeCert()
})

/** A controller on a database file of its own, snapshots going to `dir`. */
async function fileApp(dir = tempDir(), config: Record<string, unknown> = {}, clock = testClock()) {
  const db = join(tempDir(), 'controller.db')
  const app = await buildTestApp({ clock, config: { dbPath: db, snapshotDir: dir, ...config } })
  return { app, db, dir, token: await login(app), clock }
}

/** Signer and identity creates, `workers` at a time, until `stop`; ids of each answered 201. */
function writeLoad(app: FastifyInstance, token: string, workers = 4) {
  const call = caller(app, token)
  const acked: { kind: 'signers' | 'identities'; id: string }[] = []
  let running = true
  let n = 0
  const worker = async () => {
    while (running) {
      const i = n++
      const res =
        i % 2 === 0
          ? await call('POST', `${M}/identities`, { name: `load-${i}` })
          : await call('POST', `${M}/external-jwt-signers`, {
              name: `load-${i}`,
              enabled: true,
              issuer: `https://load-${i}.example`,
              audience: 'ziti',
              // A certificate of its own: one certificate belongs to one signer.
              certPem: (await makeCert({ kind: 'ES256', cn: `load-${i}` })).certPem,
              kid: `load-${i}`,
            })
      if (res.statusCode !== 201) throw new Error(`create ${i}: ${res.statusCode} ${res.body}`)
      acked.push({ kind: i % 2 === 0 ? 'identities' : 'signers', id: res.json().data.id })
    }
  }
  // A worker's failure is held until stop() (the test awaits other things meanwhile).
  const done = Promise.all(Array.from({ length: workers }, worker)).then(
    () => undefined,
    (err: unknown) => err,
  )
  return {
    acked,
    stop: async () => {
      running = false
      const err = await done
      if (err !== undefined) throw err
    },
  }
}

function snapshotFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.db'))
    .sort()
}

describe('POST /database/snapshot on SQLite', () => {
  it('copies the database under a steady write load: the file passes integrity_check and holds every create acknowledged before the request', async () => {
    const { app, token, dir } = await fileApp()
    const load = writeLoad(app, token)
    while (load.acked.length < 40) await new Promise((r) => setTimeout(r, 5))
    const before = [...load.acked]
    const res = await caller(app, token)('POST', SNAPSHOT)
    const afterCount = load.acked.length
    await load.stop()
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ data: {}, meta: {} })
    // Writes went on while the copy ran.
    expect(load.acked.length).toBeGreaterThan(before.length)
    expect(afterCount).toBeGreaterThanOrEqual(before.length)

    const [file] = snapshotFiles(dir)
    expect(file).toMatch(/^controller-\d{8}T\d{9}Z\.db$/)
    const copy = new Database(join(dir, file as string), { readonly: true })
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok')
      for (const { kind, id } of before) {
        const table = kind === 'signers' ? 'signers' : 'identities'
        const row = copy.prepare(`SELECT id FROM ${table} WHERE id = ?`).get(id)
        expect(row, `${kind} ${id}`).toBeDefined()
      }
    } finally {
      copy.close()
    }
  })

  it('restores into a second controller: the same signers, identities and policies, and a JWT login works there', async () => {
    const clock = testClock()
    const { app, token, dir } = await fileApp(undefined, {}, clock)
    await jwtFixture(app, token, cert)
    const load = writeLoad(app, token, 2)
    while (load.acked.length < 10) await new Promise((r) => setTimeout(r, 5))
    await load.stop()
    const expected = await listed(app, token)
    expect((await caller(app, token)('POST', SNAPSHOT)).statusCode).toBe(200)

    // The restore recipe: a copy of the snapshot as the database file of a controller.
    const [file] = snapshotFiles(dir)
    const restored = join(tempDir(), 'controller.db')
    copyFileSync(join(dir, file as string), restored)
    const second = await buildTestApp({ clock, config: { dbPath: restored } })
    const secondToken = await login(second, 'admin', ADMIN_PASSWORD)
    expect(await listed(second, secondToken)).toEqual(expected)
    // Sessions live when the snapshot was taken are kept by the restore.
    const kept = await caller(second, token)('GET', `${M}/current-api-session`)
    expect(kept.statusCode).toBe(200)

    const jwt = await signJwt(
      cert.privateKey,
      { iss: ISSUER, aud: 'ziti', sub: 'alice@example.com' },
      { kid: 'backup-key', now: clock() },
    )
    const res = await second.inject({
      method: 'POST',
      url: `${M}/authenticate?method=ext-jwt`,
      headers: { authorization: `Bearer ${jwt}` },
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json().data.identity.name).toBe('alice')
  })

  it(`keeps CTRL_SNAPSHOT_KEEP snapshots, removing the oldest`, async () => {
    const { app, token, dir, clock } = await fileApp(undefined, { snapshotKeep: 2 })
    const names: string[] = []
    for (let i = 0; i < 4; i++) {
      expect((await caller(app, token)('POST', SNAPSHOT)).statusCode).toBe(200)
      names.push(...snapshotFiles(dir).filter((n) => !names.includes(n)))
      clock.advance(60_000)
    }
    expect(names).toHaveLength(4)
    expect(snapshotFiles(dir)).toEqual(names.slice(2))
  })

  it("writes snapshots (and a folder it makes) readable by the controller's user only, whatever the umask", async () => {
    const dir = join(tempDir(), 'made-here')
    const umask = process.umask(0o022)
    try {
      const { app, token } = await fileApp(dir)
      expect((await caller(app, token)('POST', SNAPSHOT)).statusCode).toBe(200)
      expect(statSync(dir).mode & 0o777).toBe(0o700)
      const [file] = snapshotFiles(dir)
      expect(statSync(join(dir, file as string)).mode & 0o777).toBe(0o600)
      // The copy is whole: it opens as the database it was taken from.
      const copy = new Database(join(dir, file as string), { readonly: true })
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok')
      copy.close()
    } finally {
      process.umask(umask)
    }
  })

  it('records an audit event with action snapshot naming the file', async () => {
    const { app, token, dir } = await fileApp()
    expect((await caller(app, token)('POST', SNAPSHOT)).statusCode).toBe(200)
    const filter = encodeURIComponent('action = "snapshot"')
    const events = (await caller(app, token)('GET', `${M}/audit-events?filter=${filter}`)).json()
    expect(events.data).toHaveLength(1)
    expect(events.data[0]).toMatchObject({
      action: 'snapshot',
      entityType: 'database',
      entityId: join(dir, snapshotFiles(dir)[0] as string),
      actor: { name: 'admin' },
    })
  })

  it('answers 500 SNAPSHOT_DIR_NOT_WRITABLE for a folder that cannot be made, leaves no file and keeps serving', async () => {
    const parent = tempDir()
    const blocker = join(parent, 'not-a-folder')
    writeFileSync(blocker, 'a regular file')
    // Tests run as root, which ignores permissions: a path under a regular file cannot be a folder.
    const { app, token } = await fileApp(join(blocker, 'snapshots'))
    const res = await caller(app, token)('POST', SNAPSHOT)
    expect(res.statusCode, res.body).toBe(500)
    expect(res.json().error.code).toBe('SNAPSHOT_DIR_NOT_WRITABLE')
    expect(readdirSync(parent)).toEqual(['not-a-folder'])
    const created = await caller(app, token)('POST', `${M}/identities`, { name: 'after' })
    expect(created.statusCode).toBe(201)
  })

  it('answers 400 SNAPSHOT_NOT_SUPPORTED for an in-memory database without CTRL_SNAPSHOT_DIR', async () => {
    const app = await buildTestApp()
    const res = await caller(app, await login(app))('POST', SNAPSHOT)
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('SNAPSHOT_NOT_SUPPORTED')
  })

  it('refuses sessions of non-admin identities with 401 UNAUTHORIZED, and requests without one', async () => {
    const { app, token, dir } = await fileApp()
    const call = caller(app, token)
    const user = (await call('POST', `${M}/identities`, { name: 'user' })).json().data.id
    await call('PUT', `${M}/identities/${user}/password`, { password: 'user-password-123' })
    const userToken = await login(app, 'user', 'user-password-123')
    for (const [method, path] of [
      ['POST', 'snapshot'],
      ['POST', 'check-data-integrity'],
      ['GET', 'data-integrity-results'],
    ] as const) {
      const res = await caller(app, userToken)(method, `${M}/database/${path}`)
      expect(res.statusCode, path).toBe(401)
      expect(res.json().error.code).toBe('UNAUTHORIZED')
      const anonymous = await app.inject({ method, url: `${M}/database/${path}` })
      expect(anonymous.statusCode, path).toBe(401)
    }
    expect(snapshotFiles(dir)).toEqual([])
  })
})

describe.skipIf(!PG_URL)('POST /database/snapshot on PostgreSQL', () => {
  it('answers 400 SNAPSHOT_NOT_SUPPORTED naming pg_dump and the README section', async () => {
    const app = await buildTestApp({ storeKind: 'postgres' })
    const res = await caller(app, await login(app))('POST', SNAPSHOT)
    expect(res.statusCode).toBe(400)
    const { error } = res.json()
    expect(error.code).toBe('SNAPSHOT_NOT_SUPPORTED')
    expect(error.message).toContain('pg_dump')
    expect(error.message).toContain('"Backups"')
  })
})
