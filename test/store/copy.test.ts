import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { copyStore } from '../../src/store/copy.js'
import { ADMIN_PASSWORD, buildTestApp, caller, login } from '../helpers/app.js'
import { makeCert } from '../helpers/certs.js'
import { policyRecord, signerRecord } from '../helpers/records.js'
import { createTestDatabase, openTestStore, PG_URL } from '../helpers/stores.js'

const root = new URL('../../', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'ctrl-copy-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const run = (args: string[]) =>
  promisify(execFile)(
    join(root, 'node_modules/.bin/tsx'),
    ['scripts/copy-to-postgres.ts', ...args],
    {
      cwd: root,
    },
  )

describe.skipIf(!PG_URL)('npm run copy-to-postgres', () => {
  it('copies every entity of a SQLite database into PostgreSQL, passwords and sessions included', async () => {
    const file = join(dir, 'controller.db')
    const cert = await makeCert()
    const source = await buildTestApp({ config: { dbPath: file } })
    const token = await login(source)
    const call = caller(source, token)
    const M = '/edge/management/v1'
    const signer = await call('POST', `${M}/external-jwt-signers`, {
      name: 'corp',
      enabled: true,
      issuer: 'https://corp.test',
      audience: 'ziti',
      certPem: cert.certPem,
      kid: 'k1',
      externalAuthUrl: 'https://corp.test/auth',
      tags: { team: 'a' },
    })
    const signerId = signer.json().data.id
    const policy = await call('POST', `${M}/auth-policies`, {
      name: 'corp only',
      primary: {
        cert: { allowed: false },
        updb: { allowed: true },
        extJwt: { allowed: true, allowedSigners: [signerId] },
      },
      secondary: { requireTotp: false, requireExtJwtSigner: null },
    })
    const alice = await call('POST', `${M}/identities`, {
      name: 'alice',
      externalId: 'alice@corp',
      authPolicyId: policy.json().data.id,
    })
    expect(alice.statusCode).toBe(201)
    const before = {
      signers: (await call('GET', `${M}/external-jwt-signers`)).json().data,
      identities: (await call('GET', `${M}/identities`)).json().data,
      policies: (await call('GET', `${M}/auth-policies`)).json().data,
    }
    await source.close()

    const url = new URL(await createTestDatabase())
    url.password = 'sekret-pw' // the server trusts local connections; the output must hide it
    const { stdout } = await run([file, url.toString()])
    expect(stdout).toContain('copied 1 signers, 2 policies, 2 identities and 1 sessions')
    expect(stdout).not.toContain('sekret-pw')

    const target = await buildTestApp({ config: { dbPath: url.toString() } })
    // The session made on SQLite is still live, and the admin's password still works.
    const same = caller(target, token)
    expect((await same('GET', `${M}/current-api-session`)).statusCode).toBe(200)
    await login(target, 'admin', ADMIN_PASSWORD)
    const strip = (items: { hasApiSession?: unknown }[]) =>
      items.map(({ hasApiSession: _, ...rest }) => rest)
    expect((await same('GET', `${M}/external-jwt-signers`)).json().data).toEqual(before.signers)
    expect(strip((await same('GET', `${M}/identities`)).json().data)).toEqual(
      strip(before.identities),
    )
    expect((await same('GET', `${M}/auth-policies`)).json().data).toEqual(before.policies)

    // A second copy into the same, no longer empty, database is refused and changes nothing.
    await expect(run([file, url.toString()])).rejects.toMatchObject({ code: 1 })
    expect((await same('GET', `${M}/identities`)).json().meta.pagination.totalCount).toBe(2)
  }, 60_000)

  it('copies a signer enrolling into a policy inserted after it, and refuses one whose policy is gone, naming it', async () => {
    const from = await openTestStore('sqlite')
    const to = await openTestStore('postgres')
    try {
      await from.repos.policies.insert(policyRecord('enroll-here'))
      await from.repos.signers.insert(signerRecord('s1', 'enroll-here'))
      // Signers are copied before policies: the key is checked at commit.
      expect(await copyStore(from, to)).toMatchObject({ signers: 1, policies: 2 })
      expect((await to.repos.signers.get('s1'))?.enrollAuthPolicyId).toBe('enroll-here')

      const dangling = await openTestStore('sqlite')
      const empty = await openTestStore('postgres') // this file's database again, emptied
      try {
        await dangling.repos.signers.insert(signerRecord('s2', 'gone')) // as a race left it
        await expect(copyStore(dangling, empty)).rejects.toThrow(
          'signer s2 enrolls into auth policy gone (enrollAuthPolicyId), which does not exist',
        )
        expect(await empty.repos.signers.get('s2')).toBeUndefined()
      } finally {
        await dangling.close()
        await empty.close()
      }
    } finally {
      await from.close()
      await to.close()
    }
  })

  it('refuses wrong arguments with its usage', async () => {
    await expect(run(['only-one'])).rejects.toMatchObject({ code: 2 })
    await expect(run([join(dir, 'missing.db'), PG_URL as string])).rejects.toMatchObject({
      code: 2,
    })
  })
})
