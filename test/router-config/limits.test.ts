import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { run } from '../../src/router-config/cli.js'
import { checkRouterConfig } from '../../src/router-config/index.js'

const dir = mkdtempSync(join(tmpdir(), 'router-config-limits-'))

/** A "billion laughs" of 9 levels of 9 aliases each: 9^9 values once expanded, in under 500 bytes. */
function aliasBomb(): string {
  const lines = ['v: 3', 'a0: &a0 [x, x, x, x, x, x, x, x, x]']
  for (let i = 1; i <= 8; i++) {
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    )
  }
  return `${lines.join('\n')}\n`
}

function exec(...args: string[]) {
  let out = ''
  let err = ''
  const status = run(
    args,
    {},
    (s) => {
      out += s
    },
    (s) => {
      err += s
    },
  )
  return { status, out, err }
}

const identity = (cert: string) =>
  `v: 3\nidentity:\n  cert: ${cert}\n  key: ${join(dir, 'missing.key')}\nctrl:\n  endpoint: tls:ctrl.example.com:6262\n`

describe('router-config limits (finding: router-config check alias bomb and /dev/zero)', () => {
  it('stops an alias bomb at the expansion budget with one clear error', () => {
    const bomb = aliasBomb()
    expect(bomb.length).toBeLessThan(500)
    const r = checkRouterConfig(bomb, {})
    expect(r.errors).toHaveLength(1)
    expect(r.errors[0]?.message).toMatch(/expands to more than 100 aliases or 100000 values/)
    expect(r.config).toBeUndefined()
  })

  it('stops a wide expansion without aliases over the budget too, and accepts a few aliases', () => {
    const few = `v: 3\nx: &x [1, 2]\ny: [*x, *x, *x]\nidentity: {cert: c, key: k}\nctrl: {endpoint: "tls:c:1"}\n`
    expect(checkRouterConfig(few, {}).errors.map((e) => e.message)).not.toContainEqual(
      expect.stringMatching(/expands/),
    )
    const many = `v: 3\nx: &x 1\ny: [${Array(150).fill('*x').join(', ')}]\n`
    expect(checkRouterConfig(many, {}).errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/expands to more than 100 aliases/),
    ])
  })

  it('the command reports the alias bomb in a file and exits 1', () => {
    const path = join(dir, 'bomb.yml')
    writeFileSync(path, aliasBomb())
    const { status, out } = exec('check', path)
    expect(status).toBe(1)
    expect(out.trim().split('\n')).toHaveLength(1)
    expect(out).toContain('aliases')
  })

  it('--check-files refuses /dev/zero, a FIFO and a file over 1 MiB as identity files', () => {
    const fifo = join(dir, 'cert.fifo')
    execFileSync('mkfifo', [fifo])
    const big = join(dir, 'big.cert')
    writeFileSync(big, `-----BEGIN CERTIFICATE-----\n${'A'.repeat(1024 * 1024)}\n`)
    for (const [cert, why] of [
      ['/dev/zero', 'not a regular file'],
      [fifo, 'not a regular file'],
      [big, 'larger than 1048576 bytes'],
    ] as const) {
      const r = checkRouterConfig(identity(cert), {}, { checkFiles: true })
      const problem = r.errors.find((e) => e.path === 'identity.cert')
      expect(problem?.message).toContain(why)
    }
  })

  it('check refuses /dev/zero and a FIFO as the configuration file itself, exit 2', () => {
    const fifo = join(dir, 'config.fifo')
    execFileSync('mkfifo', [fifo])
    for (const path of ['/dev/zero', fifo]) {
      const { status, err } = exec('check', path)
      expect(status).toBe(2)
      expect(err).toContain('not a regular file')
    }
  })
})
