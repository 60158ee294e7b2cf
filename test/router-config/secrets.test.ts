import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { run as cli } from '../../src/router-config/cli.js'
import { checkRouterConfig } from '../../src/router-config/index.js'

const BASE = 'v: 3\nidentity: {cert: /a, key: /b}\nctrl: {endpoint: "tls:a:1"}\n'

/**
 * The runs of `n` characters of `secret` that `text` holds (none, when nothing leaks). Messages
 * are read for runs of 4; the printed configuration for runs of 8, since its keys hold words such
 * as `interval`, which shares `nter` with `Hunter2`.
 */
function leaks(text: string, secret: string, n = 4): string[] {
  const found = new Set<string>()
  for (let i = 0; i + n <= secret.length; i++) {
    const run = secret.slice(i, i + n)
    if (text.includes(run)) found.add(run)
  }
  return [...found]
}

/** What a check prints of a value: its messages (runs of 4) and configuration (runs of 8). */
const leaked = (r: ReturnType<typeof checkRouterConfig>, secret: string) => [
  ...leaks(JSON.stringify([r.errors, r.warnings]), secret),
  ...leaks(JSON.stringify(r.printable), secret, 8),
]

describe('no part of a value from the environment is printed', () => {
  it('a piece of a substituted value quoted in a message (the port of an address)', () => {
    const secret = 'deploy:Hunter2SuperSecret'
    const r = checkRouterConfig(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference
      BASE.replace('"tls:a:1"', '"tls:${CREDS}"'),
      { CREDS: secret },
    )
    expect(r.errors.map((e) => e.path)).toEqual(['ctrl.endpoint'])
    expect(leaked(r, secret)).toEqual([])
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as messages show it
    expect(r.errors[0]?.message).toContain('${CREDS}')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: as --print shows it
    expect(r.printable?.ctrl.endpoint).toBe('tls:${CREDS}')
  })

  it('the %XX escape of an identity path, and the start of a long value', () => {
    const path = '/etc/%zzHunter2SuperSecret.pem'
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference
    const r = checkRouterConfig(BASE.replace('cert: /a', 'cert: "${CERT}"'), { CERT: path })
    expect(r.errors.map((e) => e.path)).toEqual(['identity.cert'])
    expect(r.errors[0]?.message).toMatch(/invalid URL escape/)
    expect(leaked(r, path)).toEqual([])
    expect(JSON.stringify([r.errors, r.printable])).not.toContain('%zz')
    const body = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'.repeat(20)
    const key = `\n-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference
    const pasted = checkRouterConfig(BASE.replace('key: /b', 'key: "${KEY}"'), { KEY: key })
    expect(pasted.errors.map((e) => e.path)).toEqual(['identity.key'])
    // The message quotes the value as written, the variable in place of its value.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the variable's name as messages show it
    expect(pasted.errors[0]?.message).toContain('"${KEY}"')
    expect(leaked(pasted, body)).toEqual([])
  })

  it('nor where a long value is cut short next to it, nor its length, nor after a stray %', () => {
    const secret = 'XYZsecretvalue-0123456789'
    // 36 characters of the file's own, then the secret: a cut at 40 would keep its first 3.
    const padded = `cert: "/${'a'.repeat(36)}\${SECRET}#"`
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference
    const escaped = 'cert: "/x%${SECRET}"'
    for (const cert of [padded, escaped]) {
      const r = checkRouterConfig(BASE.replace('cert: /a', cert), { SECRET: secret })
      expect(r.errors.map((e) => e.path)).toEqual(['identity.cert'])
      const shown = JSON.stringify([r.errors, r.warnings])
      expect(shown).not.toMatch(/XY|X\.\.\.|%X/)
      expect(shown).not.toContain(`${secret.length + 38} characters`)
    }
  })

  it('nor in what the command prints, with --print, as YAML or JSON', () => {
    const secret = 'deploy:Hunter2SuperSecret'
    const file = join(mkdtempSync(join(tmpdir(), 'router-hide-')), 'router.yml')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference
    const endpoint = BASE.replace('"tls:a:1"', '"tls:${CREDS}"')
    writeFileSync(file, `${endpoint}edge:\n  note: "x-\${CREDS}-y"\n`)
    for (const flags of [['--print'], ['--print', '--json']]) {
      let out = ''
      let err = ''
      const status = cli(
        ['check', file, ...flags],
        { CREDS: secret },
        (s) => {
          out += s
        },
        (s) => {
          err += s
        },
      )
      expect(status).toBe(1)
      const problems = flags.includes('--json') ? JSON.stringify(JSON.parse(out).errors) : err
      expect(problems).toContain('ctrl.endpoint')
      expect(leaks(problems, secret)).toEqual([])
      expect(leaks(out, secret, 8)).toEqual([])
      // biome-ignore lint/suspicious/noTemplateCurlyInString: as --print shows it
      expect(out).toContain('x-${CREDS}-y')
    }
    rmSync(dirname(file), { recursive: true, force: true })
  })
})
