import { Writable } from 'node:stream'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { NESTED_SECRET_KEYS, redaction, redactNested, turnBuffered } from '../src/logger.js'

/** A pino logger with the controller's redaction, writing its lines into an array. */
function capture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l))
      done()
    },
  })
  return { lines, log: pino({ level: 'trace', ...redaction() }, stream) }
}

describe('log redaction', () => {
  it('censors each secret key one level down, under any key', () => {
    const { lines, log } = capture()
    for (const key of NESTED_SECRET_KEYS) {
      log.info({ body: { user: 'u', [key]: 'secret-value' }, other: { [key]: 'x' } }, key)
    }
    expect(lines).toHaveLength(NESTED_SECRET_KEYS.length)
    for (const [i, key] of NESTED_SECRET_KEYS.entries()) {
      expect(lines[i]).toMatchObject({
        body: { user: 'u', [key]: '[redacted]' },
        other: { [key]: '[redacted]' },
      })
    }
    expect(JSON.stringify(lines)).not.toContain('secret-value')
  })

  it('censors the top-level keys and header paths', () => {
    const { lines, log } = capture()
    log.info({
      password: 'p1',
      token: 't1',
      headers: { authorization: 'Bearer a1', 'zt-session': 's1', accept: 'json' },
      req: { headers: { authorization: 'a2', 'zt-session': 's2', cookie: 'c2' } },
    })
    expect(lines[0]).toMatchObject({
      password: '[redacted]',
      token: '[redacted]',
      headers: { authorization: '[redacted]', 'zt-session': '[redacted]', accept: 'json' },
      req: { headers: { authorization: '[redacted]', 'zt-session': '[redacted]' } },
    })
    for (const secret of ['p1', 't1', 'a1', 's1', 'a2', 's2', 'c2']) {
      expect(JSON.stringify(lines[0])).not.toContain(`"${secret}"`)
    }
  })

  it('keeps an error an error: type, message and stack stay, raw bytes go', () => {
    const { lines, log } = capture()
    const err = Object.assign(new TypeError('Parse Error'), {
      code: 'HPE_INVALID_METHOD',
      rawPacket: Buffer.from('zt-session: raw-secret\r\n'),
    })
    log.error({ err }, 'client error')
    expect(lines[0]?.err).toMatchObject({
      type: 'TypeError',
      message: 'Parse Error',
      code: 'HPE_INVALID_METHOD',
      rawPacket: '[redacted]',
    })
    expect((lines[0]?.err as { stack?: string } | undefined)?.stack).toContain(
      'TypeError: Parse Error',
    )
    // The caller's object is not changed.
    expect(Buffer.isBuffer(err.rawPacket)).toBe(true)
  })

  it('returns the very object when nothing needs censoring, and never changes the input', () => {
    const plain = { method: 'GET', statusCode: 200, list: ['password'], nested: { a: 1 } }
    expect(redactNested(plain)).toBe(plain)
    const body = { password: 'p' }
    const input = { body }
    const out = redactNested(input)
    expect(out).not.toBe(input)
    expect(out.body).toEqual({ password: '[redacted]' })
    expect(input.body).toBe(body)
    expect(body.password).toBe('p')
  })
})

describe('turnBuffered log output', () => {
  /** A sink that records each write it is given, and each flushSync. */
  function sink() {
    const writes: string[] = []
    let flushes = 0
    return {
      writes,
      flushes: () => flushes,
      write: (text: string) => writes.push(text),
      flushSync: () => {
        flushes++
      },
    }
  }
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

  it('writes the lines of one turn together, in order, once the turn is over', async () => {
    const out = sink()
    const log = pino({ level: 'info', base: null, timestamp: false }, turnBuffered(out))
    log.info('one')
    log.info('two')
    log.warn('three')
    expect(out.writes).toEqual([]) // nothing written within the turn
    await nextTurn()
    expect(out.writes).toHaveLength(1)
    expect(
      (out.writes[0] as string)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['one', 'two', 'three'])
    log.info('four') // a later turn: a write of its own
    await nextTurn()
    expect(out.writes.map((w) => w.split('\n').filter(Boolean).length)).toEqual([3, 1])
  })

  it('flushSync writes what is pending at once, then flushes the sink', async () => {
    const out = sink()
    const stream = turnBuffered(out)
    stream.write('a\n')
    stream.write('b\n')
    stream.flushSync()
    expect(out.writes).toEqual(['a\nb\n'])
    expect(out.flushes()).toBe(1)
    await nextTurn()
    expect(out.writes).toEqual(['a\nb\n']) // nothing written twice
  })

  it('does not hold more than 512 lines: a long turn writes as it goes', async () => {
    const out = sink()
    const stream = turnBuffered(out)
    for (let i = 0; i < 1200; i++) stream.write(`${i}\n`)
    expect(out.writes).toHaveLength(2) // 512 + 512 lines, 176 pending
    await nextTurn()
    const all = out.writes.join('').split('\n').filter(Boolean)
    expect(all).toEqual(Array.from({ length: 1200 }, (_, i) => String(i)))
  })
})
