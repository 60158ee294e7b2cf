import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { makeServerCert } from './helpers/certs.js'
import { startServer, stopServer } from './helpers/server-process.js'

const dir = mkdtempSync(join(tmpdir(), 'ctrl-lazy-'))
const preload = fileURLToPath(new URL('./helpers/loaded-modules.cjs', import.meta.url))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The libraries a controller never needs unless a setting asks for what they do. */
const X509 = '/node_modules/@peculiar/x509/'
const STATIC = '/node_modules/@fastify/static/'

/**
 * Starts the built server with `env` on a database of its own, asks it for its signers (the
 * discovery route, so the routes and their modules are loaded), stops it and resolves with the
 * files of the CommonJS modules it had loaded.
 */
async function loadedBy(name: string, env: Record<string, string>): Promise<string[]> {
  const list = join(dir, `${name}.modules`)
  const server = await startServer({
    CTRL_DB: join(dir, `${name}.db`),
    CTRL_ADMIN_PASSWORD: 'lazy-admin-password',
    NODE_OPTIONS: `--require ${preload}`,
    LOADED_MODULES_FILE: list,
    ...env,
  })
  let code: number | null
  try {
    if (!server.base.startsWith('https:')) {
      const res = await fetch(`${server.base}/edge/client/v1/external-jwt-signers`)
      expect(res.status).toBe(200)
    }
  } finally {
    code = await stopServer(server)
  }
  expect(code).toBe(0)
  return readFileSync(list, 'utf8').split('\n')
}

const has = (files: string[], library: string) => files.some((f) => f.includes(library))

describe('libraries loaded only where a setting needs them (memory of every controller)', () => {
  it('a plain HTTP controller without a console loads neither the x509 library nor @fastify/static', async () => {
    const files = await loadedBy('plain', {})
    // The list is real: the libraries every controller needs are in it.
    expect(has(files, '/node_modules/fastify/')).toBe(true)
    expect(has(files, '/node_modules/better-sqlite3/')).toBe(true)
    expect(has(files, X509)).toBe(false)
    expect(has(files, STATIC)).toBe(false)
  })

  it('TLS loads the x509 library (its CA bundle), a console folder loads @fastify/static', async () => {
    const { certPem, keyPem } = await makeServerCert()
    writeFileSync(join(dir, 'tls.crt'), certPem)
    writeFileSync(join(dir, 'tls.key'), keyPem)
    const tls = await loadedBy('tls', {
      CTRL_TLS_CERT: join(dir, 'tls.crt'),
      CTRL_TLS_KEY: join(dir, 'tls.key'),
    })
    expect(has(tls, X509)).toBe(true)
    expect(has(tls, STATIC)).toBe(false)

    const consoleDir = join(dir, 'zac')
    mkdirSync(consoleDir)
    writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>')
    const withConsole = await loadedBy('console', { CTRL_CONSOLE_DIR: consoleDir })
    expect(has(withConsole, STATIC)).toBe(true)
    expect(has(withConsole, X509)).toBe(false)
  })
})
