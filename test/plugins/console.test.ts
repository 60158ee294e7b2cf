import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../helpers/app.js'
import { listen, rawRequest } from '../http/raw-http.js'

// A console build of our own (not a copy of OpenZiti's): an index.html, a hashed asset, a plain
// file, a dot file, and a secret beside the folder that a symlink inside points at.
const base = mkdtempSync(join(tmpdir(), 'ctrl-console-'))
const dir = join(base, 'zac')
const INDEX = '<!doctype html><title>console</title>'
const ASSET = 'console.log("main")'
mkdirSync(join(dir, 'assets'), { recursive: true })
writeFileSync(join(dir, 'index.html'), INDEX)
writeFileSync(join(dir, 'main.3f2a1b9c8d7e6f50.js'), ASSET)
writeFileSync(join(dir, 'assets', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>')
writeFileSync(join(dir, '.env'), 'SECRET=1')
writeFileSync(join(base, 'secret.txt'), 'outside')
symlinkSync(join(base, 'secret.txt'), join(dir, 'leak.txt'))
symlinkSync(join(dir, 'index.html'), join(dir, 'home.html'))
// Links inside the folder to its dot file and to a dot folder: what they lead to is not served.
mkdirSync(join(dir, '.git'))
writeFileSync(join(dir, '.git', 'config'), 'secret=1')
symlinkSync('.env', join(dir, 'envlink'))
symlinkSync('.git', join(dir, 'gitlink'))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const SECURITY = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

describe('the admin console at /zac/ (CTRL_CONSOLE_DIR)', () => {
  it('serves files with content types, validators, caching and security headers', async () => {
    const app = await buildTestApp({ config: { consoleDir: dir } })
    const index = await app.inject({ method: 'GET', url: '/zac/' })
    expect(index.statusCode).toBe(200)
    expect(index.body).toBe(INDEX)
    expect(index.headers['content-type']).toMatch(/^text\/html/)
    expect(index.headers['cache-control']).toBe('no-cache')
    expect(index.headers.etag).toBeDefined()
    expect(index.headers['last-modified']).toBeDefined()
    expect(index.headers).toMatchObject(SECURITY)
    const asset = await app.inject({ method: 'GET', url: '/zac/main.3f2a1b9c8d7e6f50.js' })
    expect(asset.body).toBe(ASSET)
    expect(asset.headers['content-type']).toMatch(/javascript/)
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(asset.headers).toMatchObject(SECURITY)
    const again = await app.inject({
      method: 'GET',
      url: '/zac/main.3f2a1b9c8d7e6f50.js',
      headers: { 'if-none-match': asset.headers.etag as string },
    })
    expect(again.statusCode).toBe(304)
    const svg = await app.inject({ method: 'GET', url: '/zac/assets/logo.svg' })
    expect(svg.headers['content-type']).toMatch(/^image\/svg\+xml/)
    expect(svg.headers['cache-control']).toBe('no-cache')
    // A symlink that stays inside the folder is served.
    expect((await app.inject({ method: 'GET', url: '/zac/home.html' })).body).toBe(INDEX)
  })

  it('falls back to index.html for paths without a file, and redirects /zac to /zac/', async () => {
    const app = await buildTestApp({ config: { consoleDir: dir } })
    for (const url of [
      '/zac/identities',
      '/zac/jwt-signers/abc/edit',
      '/zac/assets/',
      '/zac/x.js',
    ]) {
      const res = await app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(200)
      expect(res.body, url).toBe(INDEX)
      expect(res.headers['cache-control'], url).toBe('no-cache')
      expect(res.headers, url).toMatchObject(SECURITY)
    }
    const bare = await app.inject({ method: 'GET', url: '/zac' })
    expect(bare.statusCode).toBe(301)
    expect(bare.headers.location).toBe('/zac/')
    expect(bare.headers).toMatchObject(SECURITY)
    const query = await app.inject({ method: 'GET', url: '/zac?x=1' })
    expect(query.headers.location).toBe('/zac/?x=1')
  })

  it('refuses traversal, symlinks out of the folder and dot files with 404', async () => {
    const app = await buildTestApp({ config: { consoleDir: dir } })
    const port = await listen(app)
    for (const path of [
      '/zac/../package.json',
      '/zac/%2e%2e/package.json',
      '/zac/%2E%2E%2Fpackage.json',
      '/zac/..%2fsecret.txt',
      '/zac/assets/..%2f..%2fsecret.txt',
      '/zac/leak.txt',
      '/zac/.env',
      '/zac/%2eenv',
      '/zac/assets/.hidden/x',
      '/zac/envlink',
      '/zac/gitlink/config',
      '/zac/%00',
    ]) {
      // Raw requests: an HTTP client would resolve the dot segments before sending.
      const res = await rawRequest(
        port,
        `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      )
      expect(res.status, path).toBe(404)
      expect(res.body, path).not.toContain('outside')
      expect(res.body, path).not.toContain('SECRET')
      expect(res.body, path).not.toContain('secret=1')
      expect(JSON.parse(res.body).error.code, path).toBe('NOT_FOUND')
    }
  })

  it('is 404 when unset, as before', async () => {
    const app = await buildTestApp()
    for (const url of ['/zac/', '/zac']) {
      const res = await app.inject({ method: 'GET', url })
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('NOT_FOUND')
    }
  })

  it('refuses to start on a missing or unreadable folder, naming the setting', async () => {
    const noIndex = join(base, 'empty')
    mkdirSync(noIndex)
    const locked = join(base, 'locked')
    mkdirSync(locked)
    writeFileSync(join(locked, 'index.html'), INDEX)
    chmodSync(locked, 0o000)
    const cases = [join(base, 'missing'), join(dir, 'index.html'), noIndex]
    // root reads any folder, whatever its mode: the locked one is only checked for other users.
    if (process.getuid?.() !== 0) cases.push(locked)
    for (const consoleDir of cases) {
      await expect(buildTestApp({ config: { consoleDir } }), consoleDir).rejects.toThrow(
        /^CTRL_CONSOLE_DIR: /,
      )
    }
    chmodSync(locked, 0o755)
  })
})
