import 'reflect-metadata'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { X509Certificate, X509Certificates } from '@peculiar/x509'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { makeCert, makeServerCert } from '../helpers/certs.js'
import { type Started, startServer, stopServer } from '../helpers/server-process.js'

const root = new URL('../../', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'ctrl-e2e-'))

const start = (env: Record<string, string>): Promise<Started> => startServer(env)
const stop = stopServer

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the built server', () => {
  it('refuses a bad setting with exit 1 and one line naming it', async () => {
    const child = spawn(process.execPath, ['dist/src/server.js'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', CTRL_SESSION_TIMEOUT: 'forever' },
    })
    let err = ''
    child.stderr.on('data', (d) => {
      err += d
    })
    const [code] = await once(child, 'exit')
    expect(code).toBe(1)
    expect(err.trim().split('\n')).toHaveLength(1)
    expect(err).toContain('CTRL_SESSION_TIMEOUT')
  })

  it('refuses to start, creating no admin and showing no password, when the generated password cannot be written', async () => {
    const folder = join(dir, 'unwritable')
    const db = join(folder, 'controller.db')
    // The file's place is taken by a folder: writing the password fails, whatever the user.
    mkdirSync(join(folder, 'admin-password'), { recursive: true })
    const child = spawn(process.execPath, ['dist/src/server.js'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', CTRL_DB: db, CTRL_PORT: '0' },
    })
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL') // it should have exited by itself
    })
    let err = ''
    child.stderr.on('data', (d) => {
      err += d
    })
    const [code] = await once(child, 'exit')
    expect(code).toBe(1)
    expect(err).toContain('CTRL_ADMIN_PASSWORD is unset')
    expect(err).toContain(join(folder, 'admin-password'))
    expect(err).not.toMatch(/generated password:/)
    // No admin was stored: a start that names the password creates it, and it logs in.
    const second = await start({ CTRL_DB: db, CTRL_ADMIN_PASSWORD: 'chosen-admin-password-1' })
    const res = await fetch(`${second.base}/edge/management/v1/authenticate?method=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'chosen-admin-password-1' }),
    })
    expect(res.status).toBe(200)
    expect(await stop(second)).toBe(0)
  })

  it('writes the generated password to a new private file, never into one that was there or through a link', async () => {
    const folder = join(dir, 'replaced')
    mkdirSync(folder, { recursive: true })
    const file = join(folder, 'admin-password')
    // A file left readable by others, held open by another reader, and a link to another file.
    writeFileSync(file, 'stale\n', { mode: 0o644 })
    chmodSync(file, 0o644)
    const held = openSync(file, 'r')
    onTestFinished(() => closeSync(held))
    const first = await start({ CTRL_DB: join(folder, 'controller.db') })
    expect(await stop(first)).toBe(0)
    const password = readFileSync(file, 'utf8').trim()
    expect(password).toMatch(/^[\w-]{24}$/)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readFileSync(held, 'utf8')).toBe('stale\n') // the reader's open file never saw it
    expect(readdirSync(folder).filter((n) => n.endsWith('.tmp'))).toEqual([])

    const linked = join(dir, 'linked')
    mkdirSync(linked, { recursive: true })
    const target = join(dir, 'link-target')
    writeFileSync(target, 'someone else\n', { mode: 0o644 })
    symlinkSync(target, join(linked, 'admin-password'))
    const second = await start({ CTRL_DB: join(linked, 'controller.db') })
    expect(await stop(second)).toBe(0)
    expect(readFileSync(target, 'utf8')).toBe('someone else\n')
    expect(lstatSync(join(linked, 'admin-password')).isFile()).toBe(true)
    expect(readFileSync(join(linked, 'admin-password'), 'utf8').trim()).toMatch(/^[\w-]{24}$/)
  })

  it('creates an admin with a generated password, keeps data across a restart and stops cleanly', async () => {
    const db = join(dir, 'nested', 'controller.db')
    const first = await start({ CTRL_DB: db })
    // The password is in a file only this user can read, beside the database; never on stderr.
    const file = join(dir, 'nested', 'admin-password')
    expect(first.stderr()).toContain(`written to ${file}`)
    const password = readFileSync(file, 'utf8').trim()
    expect(password).toMatch(/^[\w-]{24}$/)
    expect(first.stderr()).not.toContain(password)
    expect(statSync(file).mode & 0o777).toBe(0o600)

    const auth = async (base: string) => {
      const res = await fetch(`${base}/edge/management/v1/authenticate?method=password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password }),
      })
      expect(res.status).toBe(200)
      return res.headers.get('zt-session') as string
    }
    const token = await auth(first.base)
    const created = await fetch(`${first.base}/edge/management/v1/ext-jwt-signers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'zt-session': token },
      body: JSON.stringify({
        name: 'kept',
        enabled: true,
        issuer: 'https://kept',
        audience: 'a',
        jwksEndpoint: 'http://127.0.0.1:1/jwks',
        externalAuthUrl: 'https://kept/auth',
      }),
    })
    expect(created.status).toBe(201)
    expect(await stop(first)).toBe(0)

    const second = await start({ CTRL_DB: db })
    expect(second.stderr()).not.toContain('generated password')
    expect(second.stderr()).not.toContain(password)
    const again = await auth(second.base)
    const list = await fetch(`${second.base}/edge/management/v1/external-jwt-signers`, {
      headers: { 'zt-session': again },
    })
    const listed = (await list.json()) as { data: { name: string }[] }
    expect(listed.data.map((s) => s.name)).toEqual(['kept'])
    // The first session survives the restart too.
    const old = await fetch(`${second.base}/edge/management/v1/current-api-session`, {
      headers: { 'zt-session': token },
    })
    expect(old.status).toBe(200)
    const client = await fetch(`${second.base}/edge/client/v1/external-jwt-signers`)
    expect(((await client.json()) as { data: unknown[] }).data).toHaveLength(1)
    expect(await stop(second)).toBe(0)
  })

  it('serves HTTPS when CTRL_TLS_CERT and CTRL_TLS_KEY are set', async () => {
    const { certPem, keyPem } = await makeServerCert()
    const certPath = join(dir, 'tls.crt')
    const keyPath = join(dir, 'tls.key')
    writeFileSync(certPath, certPem)
    writeFileSync(keyPath, keyPem)
    const s = await start({
      CTRL_DB: ':memory:',
      CTRL_ADMIN_PASSWORD: 'tls-admin-password',
      CTRL_TLS_CERT: certPath,
      CTRL_TLS_KEY: keyPath,
    })
    expect(s.base.startsWith('https://')).toBe(true)
    const status = await new Promise<number>((resolve, reject) => {
      request(`${s.base}/health-checks`, { ca: certPem }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
        .on('error', reject)
        .end()
    })
    expect(status).toBe(200)
    expect(await stop(s)).toBe(0)
  })

  it('offers the CTRL_TLS_CA bundle at /.well-known/est/cacerts; an unreadable or empty one is exit 1', async () => {
    const { certPem, keyPem } = await makeServerCert()
    const ca = await makeCert({ cn: 'operator ca' })
    const tls = { CTRL_TLS_CERT: join(dir, 'ca-tls.crt'), CTRL_TLS_KEY: join(dir, 'ca-tls.key') }
    writeFileSync(tls.CTRL_TLS_CERT, certPem)
    writeFileSync(tls.CTRL_TLS_KEY, keyPem)
    writeFileSync(join(dir, 'bundle.pem'), ca.certPem)
    writeFileSync(join(dir, 'empty.pem'), '')
    for (const bad of ['missing.pem', 'empty.pem']) {
      const child = spawn(process.execPath, ['dist/src/server.js'], {
        cwd: root,
        env: { PATH: process.env.PATH ?? '', ...tls, CTRL_TLS_CA: join(dir, bad) },
      })
      let err = ''
      child.stderr.on('data', (d) => {
        err += d
      })
      const [code] = await once(child, 'exit')
      expect(code).toBe(1)
      expect(err.trim().split('\n')).toHaveLength(1)
      expect(err).toContain('CTRL_TLS_CA')
    }
    const s = await start({
      CTRL_DB: ':memory:',
      CTRL_ADMIN_PASSWORD: 'tls-admin-password',
      ...tls,
      CTRL_TLS_CA: join(dir, 'bundle.pem'),
    })
    const body = await new Promise<string>((resolve, reject) => {
      request(`${s.base}/.well-known/est/cacerts`, { ca: certPem }, (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => resolve(text))
      })
        .on('error', reject)
        .end()
    })
    const served = [...new X509Certificates(body)].map((c) => c.toString('pem'))
    expect(served).toEqual([new X509Certificate(ca.certPem).toString('pem')])
    expect(await stop(s)).toBe(0)
  })
})
