import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { listen } from '../http/raw-http.js'
import { buildMeteredApp } from './scrape.js'

const M = '/edge/management/v1'

function capture() {
  const lines: { level: number; msg: string }[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l))
      done()
    },
  })
  return { lines, stream }
}

describe('a client that goes away in the middle of its request body', () => {
  it('is logged at debug, not error, and counted with the status label aborted', async () => {
    const { lines, stream } = capture()
    const s = await buildMeteredApp({ logger: { level: 'debug', stream } })
    const port = await listen(s.app)
    for (let i = 0; i < 3; i++) {
      const socket = connect(port, '127.0.0.1')
      await new Promise((r) => socket.once('connect', r))
      socket.write(
        `POST ${M}/authenticate?method=password HTTP/1.1\r\nHost: localhost\r\n` +
          'Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{"username":',
      )
      await new Promise((r) => setTimeout(r, 50))
      socket.destroy()
    }
    let aborted = 0
    for (let i = 0; i < 200 && aborted < 3; i++) {
      await new Promise((r) => setTimeout(r, 10))
      aborted = (await s.scrape()).value('ctrl_http_requests_total', {
        method: 'POST',
        route: `${M}/authenticate`,
        status: 'aborted',
      })
    }
    expect(aborted).toBe(3)
    expect(lines.filter((l) => l.level >= 50)).toEqual([])
    expect(lines.filter((l) => l.msg === 'client aborted the request')).toHaveLength(3)
    expect(lines.find((l) => l.msg === 'client aborted the request')?.level).toBe(20)
  })
})
