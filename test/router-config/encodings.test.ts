import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { run as cli } from '../../src/router-config/cli.js'
import { checkRouterConfig } from '../../src/router-config/index.js'

const dir = mkdtempSync(join(tmpdir(), 'router-encodings-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const BASE = 'v: 3\nidentity: {cert: /a, key: /b}\nctrl: {endpoint: "tls:a:1"}\n'
const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))))
const located = (ps: { path: string; line: number; column: number }[]) =>
  ps.map((p) => `${p.path || '(file)'}@${p.line}:${p.column}`)

describe('the file as the router decodes it (yaml.v2)', () => {
  it('a byte that is not UTF-8 (Latin-1 é) is an error at its line and column', () => {
    const file = bytes('v: 3\nidentity:\n  cert: /caf', [0xe9], '.pem\n  key: /b\n')
    const r = checkRouterConfig(file, {})
    expect(located(r.errors)).toEqual(['(file)@3:13'])
    expect(r.errors[0]?.message).toMatch(/byte 0xE9 is not UTF-8/)
    expect(r.config).toBeUndefined()
  })

  it('UTF-8 that is cut off, overlong or a surrogate is refused too; real UTF-8 passes', () => {
    for (const bad of [[0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf5, 0x80, 0x80, 0x80]]) {
      const r = checkRouterConfig(bytes(BASE, 'transport: {note: "', bad, '"}\n'), {})
      expect(located(r.errors), JSON.stringify(bad)).toEqual(['(file)@4:20'])
    }
    const good = checkRouterConfig(bytes(BASE, 'transport: {note: "café ✓ 😀"}\n'), {})
    expect(good.errors.filter((e) => e.path === '')).toEqual([])
    expect(good.config?.transport?.note).toBe('café ✓ 😀')
  })

  it('a raw control character (NUL, DEL) is an error, in a value or anywhere', () => {
    for (const c of ['\0', '\x7f', '\x1b']) {
      const r = checkRouterConfig(`${BASE}transport: {note: "a${c}b"}\n`, {})
      expect(located(r.errors)).toEqual(['(file)@4:21'])
      expect(r.errors[0]?.message).toMatch(/control character U\+00(00|7F|1B) is not allowed/)
      expect(r.errors[0]?.message).not.toContain(c)
    }
    // An escape in a double-quoted value is YAML's way to write one, and passes the reader.
    const escaped = checkRouterConfig(`${BASE}transport: {note: "a\\x00b"}\n`, {})
    expect(escaped.errors.filter((e) => e.path === '')).toEqual([])
  })

  it('UTF-16 with a byte order mark, little or big endian, is read', () => {
    const text = `${BASE}transport: {note: "café"}\n`
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()])
    for (const file of [le, be]) {
      const r = checkRouterConfig(file, {})
      expect(r.errors).toEqual([])
      expect(r.config?.transport?.note).toBe('café')
      expect(r.config?.ctrl.endpoint).toBe('tls:a:1')
    }
    const odd = checkRouterConfig(Buffer.concat([le, Buffer.from([0x41])]), {})
    expect(odd.errors.map((e) => e.message)).toEqual([expect.stringMatching(/UTF-16/)])
  })

  it('the command reports a Latin-1 file at FILE:LINE:COL and exits 1', () => {
    const path = join(dir, 'latin1.yml')
    writeFileSync(path, bytes('v: 3\nidentity:\n  cert: /caf', [0xe9], '.pem\n'))
    let out = ''
    const write = (s: string) => {
      out += s
    }
    const status = cli(['check', path], {}, write, write)
    expect(status).toBe(1)
    expect(out).toBe(
      `${path}:3:13: error: (file): byte 0xE9 is not UTF-8 (Latin-1 or another encoding?): the router's YAML reader (yaml.v2) refuses the file; save the file as UTF-8\n`,
    )
  })
})

describe('identity values with control characters (reference §1.5: Go URL parsing)', () => {
  const pasted = `\\n-----BEGIN PRIVATE KEY-----\\n${'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'.repeat(8)}\\n-----END PRIVATE KEY-----\\n`

  it('a pasted key that does not start with -----BEGIN is an error, shown short and escaped', () => {
    for (const checkFiles of [false, true]) {
      const r = checkRouterConfig(BASE.replace('key: /b', `key: "${pasted}"`), {}, { checkFiles })
      const keyErrors = r.errors.filter((e) => e.path === 'identity.key')
      expect(keyErrors).toHaveLength(1)
      const message = keyErrors[0]?.message ?? ''
      expect(message).toMatch(/control character U\+000A at character 1/)
      expect(message).not.toContain('\n')
      expect(message.length).toBeLessThan(300)
      expect(message.match(/MIIEvQIBADANBgkqhkiG9w0BAQEFAASC/g) ?? []).toHaveLength(0)
    }
  })

  it('every identity value is checked: cert, server_cert, ca and alternate server certificates', () => {
    const identity =
      '{cert: "/a\\tb", server_cert: "/c\\nd", key: /b, ca: "/e\\rf", alt_server_certs: [{server_cert: "/g\\x00h"}]}'
    const r = checkRouterConfig(BASE.replace('{cert: /a, key: /b}', identity), {})
    expect(r.errors.map((e) => e.path)).toEqual([
      'identity.cert',
      'identity.server_cert',
      'identity.ca',
      'identity.alt_server_certs[0].server_cert',
    ])
    for (const e of r.errors) expect(e.message).toMatch(/control character U\+00/)
  })

  it('with --check-files, a path whose %0A decodes to a line break prints escaped', () => {
    const r = checkRouterConfig(
      BASE.replace('cert: /a', `cert: ${join(dir, 'a%0Ab.pem')}`),
      {},
      { checkFiles: true },
    )
    const cert = r.errors.find((e) => e.path === 'identity.cert')
    expect(cert?.message).toMatch(/does not exist/)
    expect(cert?.message).toContain('a\\nb.pem')
    expect(cert?.message).not.toContain('\n')
  })
})
