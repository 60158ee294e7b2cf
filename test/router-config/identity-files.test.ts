import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkRouterConfig } from '../../src/router-config/index.js'
import { makeServerCert } from '../helpers/certs.js'

const dir = mkdtempSync(join(tmpdir(), 'router-identity-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let a: { certPem: string; keyPem: string }
let b: { certPem: string; keyPem: string }
beforeAll(async () => {
  a = await makeServerCert()
  b = await makeServerCert()
})

const write = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}
/** A file whose identity section is `identity` (YAML lines, indented by two). */
const config = (identity: string) =>
  `v: 3\nidentity:\n${identity}ctrl: {endpoint: "tls:ctrl:6262"}\n`
const check = (identity: string, checkFiles = true) =>
  checkRouterConfig(config(identity), {}, { checkFiles })
const where = (ps: { path: string; line: number }[]) => ps.map((p) => `${p.path}@${p.line}`)
/** A YAML double-quoted scalar of `text`. */
const quoted = (text: string) => JSON.stringify(text)

describe('identity values the router reads as URLs (reference §1.5)', () => {
  it.each([
    ['a Windows path', 'C:\\\\x\\\\ca.pem', /URL scheme c:/],
    ['a broken escape', '/etc/ziti/a%zz.pem', /invalid URL escape "%zz"/],
    ['a % at the end', '/etc/ziti/a%', /invalid URL escape "%"/],
  ])('%s is an error, with or without --check-files', (_what, value, message) => {
    const cert = write('u.cert', a.certPem)
    const key = write('u.key', a.keyPem)
    for (const checkFiles of [false, true]) {
      const { errors } = check(`  cert: ${cert}\n  key: ${key}\n  ca: "${value}"\n`, checkFiles)
      expect(where(errors)).toEqual(['identity.ca@5'])
      expect(errors[0]?.message).toMatch(message)
    }
  })

  it('decodes %XX in a path as the router does', () => {
    const cert = write('with space.pem', a.certPem)
    const key = write('key.pem', a.keyPem)
    const { errors } = check(`  cert: ${cert.replace(' ', '%20')}\n  key: ${key}\n`)
    expect(errors).toEqual([])
  })
})

describe('--check-files reads what the files and pem: values hold', () => {
  it('a certificate and its own key pass, in files and inline', () => {
    const cert = write('a.cert', a.certPem)
    const key = write('a.key', a.keyPem)
    expect(
      check(`  cert: ${cert}\n  key: ${key}\n  server_cert: ${cert}\n  ca: ${cert}\n`).errors,
    ).toEqual([])
    const inline = check(
      `  cert: ${quoted(`pem:${a.certPem}`)}\n  key: ${quoted(`pem:${a.keyPem}`)}\n`,
    )
    expect(inline.errors).toEqual([])
  })

  it('an inline pem: certificate that does not parse is an error', () => {
    const key = write('a2.key', a.keyPem)
    const { errors } = check(
      `  cert: ${quoted('pem:-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----')}\n  key: ${key}\n`,
    )
    expect(where(errors)).toEqual(['identity.cert@3'])
    expect(errors[0]?.message).toMatch(
      /inline pem: value holds a CERTIFICATE block .* not a certificate/,
    )
  })

  it('a key that is not the certificate key is an error at the certificate', () => {
    const cert = write('b.cert', b.certPem)
    const key = write('a3.key', a.keyPem)
    const { errors } = check(`  cert: ${cert}\n  key: ${key}\n  server_cert: ${cert}\n`)
    expect(where(errors)).toEqual(['identity.cert@3', 'identity.server_cert@5'])
    expect(errors[0]?.message).toMatch(/not the one of identity.key/)
    // server_key, when given, is the server certificate's key.
    const serverKey = write('b.key', b.keyPem)
    const withServerKey = check(
      `  cert: ${cert}\n  key: ${serverKey}\n  server_cert: ${cert}\n  server_key: ${key}\n`,
    )
    expect(where(withServerKey.errors)).toEqual(['identity.server_cert@5'])
    expect(withServerKey.errors[0]?.message).toMatch(/identity.server_key/)
  })

  it('an alternate server certificate is matched to its key, or to key', () => {
    const cert = write('b2.cert', b.certPem)
    const key = write('a4.key', a.keyPem)
    const ownKey = write('b2.key', b.keyPem)
    const { errors } = check(
      `  cert: ${write('a.c', a.certPem)}\n  key: ${key}\n  alt_server_certs:\n    - {server_cert: ${cert}}\n    - {server_cert: ${cert}, server_key: ${ownKey}}\n`,
    )
    expect(where(errors)).toEqual(['identity.alt_server_certs[0].server_cert@6'])
  })

  it('an alternate server_cert of the wrong type is one error, not two', () => {
    const { errors } = check(
      '  cert: /c\n  key: /k\n  alt_server_certs: [{server_cert: 5}]\n',
      false,
    )
    expect(where(errors)).toEqual(['identity.alt_server_certs[0].server_cert@5'])
  })
})

describe('--check-files reads a hostile file in one pass', () => {
  it('a megabyte of PEM headers without an end is one error, not a hang', () => {
    const path = write('headers.pem', '-----BEGIN A-----\n'.repeat(55_000))
    const { errors } = check(`  cert: ${path}\n  key: ${write('k.pem', a.keyPem)}\n`)
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/holds no CERTIFICATE PEM block/),
    ])
    // A hang guard, not a speed goal: one pass takes milliseconds; the quadratic scan took 26 s.
  }, 10_000)
})
