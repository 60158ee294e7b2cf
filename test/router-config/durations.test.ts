import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { checkRouterConfig } from '../../src/router-config/index.js'

const file = (timeout: string) =>
  `v: 3\nidentity: {cert: c.pem, key: k.pem}\nctrl:\n  endpoint: tls:ctrl:6262\n  defaultRequestTimeout: ${timeout}\n`

describe('durations as Go reads them (reference §1.7)', () => {
  it.each(['2562048h', '9999999999h', '2562047h47m16.854775808s'])(
    '%s is longer than Go holds: an error at its line',
    (timeout) => {
      const { errors } = checkRouterConfig(file(timeout), {})
      expect(errors.map((e) => [e.path, e.line])).toEqual([['ctrl.defaultRequestTimeout', 5]])
      expect(errors[0]?.message).toMatch(/longer than a Go duration holds/)
    },
  )

  it.each([
    ['2562047h', '2562047h'],
    ['"0.0000001s"', '100ns'],
    ['"1.0000015ms"', '1.000001ms'],
    ['90m', '1h30m'],
  ])(
    '%s is kept, and the effective configuration writes it as %s, which checks again',
    (timeout, written) => {
      const first = checkRouterConfig(file(timeout), {})
      expect(first.errors).toEqual([])
      expect(first.config?.ctrl.defaultRequestTimeout).toBe(written)
      const again = checkRouterConfig(stringify(first.config), {})
      expect(again.errors).toEqual([])
      expect(again.config?.ctrl.defaultRequestTimeout).toBe(written)
    },
  )
})
