import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { checkRouterConfig } from '../../src/router-config/index.js'
import { INIT_TEMPLATE } from '../../src/router-config/init-template.js'

const neverThrows = (text: string, env: Record<string, string> = {}) => {
  const r = checkRouterConfig(text, env)
  for (const p of [...r.errors, ...r.warnings]) {
    expect(p.message).not.toMatch(/internal error/)
    expect(p.line).toBeGreaterThan(0)
    expect(typeof p.path).toBe('string')
  }
}

describe('the loader never throws', () => {
  it('on random YAML documents', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => neverThrows(stringify(value))),
      { numRuns: 300 },
    )
  })

  it('on random text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => neverThrows(text)),
      { numRuns: 300 },
    )
  })

  it('on random maps under the known section names', () => {
    const sections = [
      'v',
      'identity',
      'ctrl',
      'link',
      'listeners',
      'dialers',
      'edge',
      'forwarder',
      'healthChecks',
      'metrics',
      'web',
      'profile',
      'trace',
      'transport',
    ]
    const doc = fc.dictionary(fc.constantFrom(...sections), fc.anything(), { maxKeys: 8 })
    fc.assert(
      fc.property(doc, (value) => neverThrows(stringify(value))),
      { numRuns: 300 },
    )
  })

  it('on random mutations of a valid file', () => {
    const lines = INIT_TEMPLATE.split('\n')
    const mutation = fc.record({
      line: fc.nat({ max: lines.length - 1 }),
      op: fc.constantFrom('delete', 'replace-value', 'insert', 'indent', 'truncate'),
      text: fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          '~',
          '[]',
          '{}',
          '- x',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a YAML environment reference, not a template
          '${X}',
          '"',
          ': :',
          '0',
          'yes',
          '-1',
          '99999999999999999999',
        ),
      ),
    })
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 5 }), (muts) => {
        const copy = [...lines]
        for (const m of muts) {
          const at = m.line % copy.length
          const line = copy[at] ?? ''
          if (m.op === 'delete') copy.splice(at, 1)
          else if (m.op === 'insert') copy.splice(at, 0, m.text)
          else if (m.op === 'indent') copy[at] = ` ${line}`
          else if (m.op === 'truncate') copy[at] = line.slice(0, line.length >> 1)
          else
            copy[at] = line.includes(':')
              ? `${line.slice(0, line.indexOf(':') + 1)} ${m.text}`
              : m.text
        }
        neverThrows(copy.join('\n'), { X: 'x' })
      }),
      { numRuns: 400 },
    )
  })
})
