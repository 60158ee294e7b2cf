import { describe, expect, it } from 'vitest'
import { checkRouterConfig } from '../../src/router-config/index.js'

// Each bound the seed states, at both edges: the edge itself accepted, one past it an error at
// that field (the seed's forwarder table and its link dialer backoff table).

const BASE = 'v: 3\nidentity: {cert: /a, key: /b}\nctrl: {endpoint: "tls:a:1"}\n'
const run = (yaml: string) => checkRouterConfig(yaml, {})
const paths = (ps: { path: string }[]) => ps.map((p) => p.path)

describe('forwarder bounds (seed: forwarder table)', () => {
  const bounded: [string, number, number][] = [
    ['linkDialQueueLength', 1, 10000],
    ['linkDialWorkerCount', 1, 10000],
    ['rateLimitedQueueLength', 1, 50000],
    ['rateLimitedWorkerCount', 1, 10000],
    ['xgressDialQueueLength', 1, 10000],
    ['xgressDialWorkerCount', 1, 10000],
  ]
  it.each(bounded)('%s takes %i to %i', (field, min, max) => {
    for (const ok of [min, max]) {
      const r = run(`${BASE}forwarder: {${field}: ${ok}}\n`)
      expect(r.errors, `${field}: ${ok}`).toEqual([])
      expect(r.config?.forwarder[field as keyof typeof r.config.forwarder]).toBe(ok)
    }
    for (const bad of [min - 1, max + 1]) {
      const r = run(`${BASE}forwarder: {${field}: ${bad}}\n`)
      expect(paths(r.errors), `${field}: ${bad}`).toEqual([`forwarder.${field}`])
    }
  })

  it('faultTxInterval and idleTxInterval take 0 (disabled)', () => {
    const r = run(`${BASE}forwarder: {faultTxInterval: 0, idleTxInterval: 0}\n`)
    expect(r.errors).toEqual([])
    expect(r.config?.forwarder).toMatchObject({ faultTxInterval: 0, idleTxInterval: 0 })
  })
})

describe('link dialer backoff bounds (seed: backoff table)', () => {
  const dialer = (backoff: string, fields: string) =>
    `${BASE}link:\n  dialers:\n    - binding: transport\n      ${backoff}: {${fields}}\n`
  for (const backoff of ['healthyDialBackoff', 'unhealthyDialBackoff']) {
    it(`${backoff}: intervals 10ms to 24h, factor 1 to 100, the edges accepted`, () => {
      for (const fields of [
        'minRetryInterval: 10ms, maxRetryInterval: 24h, retryBackoffFactor: 1',
        'minRetryInterval: 24h, maxRetryInterval: 24h, retryBackoffFactor: 100',
        'minRetryInterval: 10ms, maxRetryInterval: 10ms, retryBackoffFactor: 1.5',
      ]) {
        expect(run(dialer(backoff, fields)).errors, fields).toEqual([])
      }
      const at = `link.dialers[0].${backoff}`
      for (const [fields, field] of [
        ['minRetryInterval: 9ms, maxRetryInterval: 1h', 'minRetryInterval'],
        ['minRetryInterval: 1s, maxRetryInterval: 9ms', 'maxRetryInterval'],
        ['maxRetryInterval: 24h1ms', 'maxRetryInterval'],
        ['retryBackoffFactor: 0.99', 'retryBackoffFactor'],
        ['retryBackoffFactor: 100.5', 'retryBackoffFactor'],
      ] as const) {
        expect(paths(run(dialer(backoff, fields)).errors), fields).toContain(`${at}.${field}`)
      }
    })
  }
})
