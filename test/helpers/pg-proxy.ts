import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'

/**
 * A TCP proxy on 127.0.0.1 in front of the PostgreSQL server of `url`, for failures a real network
 * has and a local server never shows:
 * - `freeze()` stops forwarding on every connection open now, both ways, and keeps their sockets
 *   open: to the client, a server that went silent. Connections made later are forwarded.
 * - `cutNextCommitAnswer()` lets the server's answer to the next COMMIT (of any connection) go
 *   nowhere: the proxy closes that connection instead of forwarding it. The server has committed;
 *   the client only sees its connection drop.
 * - `cutNextAnswerTo(text)` does the same for the next statement whose message holds `text` (a
 *   named statement's name, sent with each run): nothing more is forwarded to that client, and
 *   the connection is closed once the server is ready for the next statement (a statement in a
 *   transaction of its own has then committed).
 */
export class PgProxy {
  private readonly open = new Set<[Socket, Socket]>()
  private readonly frozen: [Socket, Socket][] = []
  private readonly server: Server
  private cutCommit = false
  /** COMMIT answers cut so far. */
  commitsCut = 0

  constructor(private readonly target: URL) {
    this.server = createServer((client) => this.forward(client))
  }

  /** Listens; resolves with `target`'s URL pointing at the proxy instead. */
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    const address = this.server.address()
    if (address === null || typeof address === 'string') throw new Error('no TCP address')
    const via = new URL(this.target)
    via.hostname = '127.0.0.1'
    via.port = String(address.port)
    return via.toString()
  }

  freeze(): number {
    const pairs = [...this.open]
    this.open.clear()
    for (const [client, upstream] of pairs) {
      client.removeAllListeners('data')
      upstream.removeAllListeners('data')
      client.pause()
      upstream.pause()
    }
    this.frozen.push(...pairs)
    return pairs.length
  }

  cutNextCommitAnswer(): void {
    this.cutCommit = true
  }

  cutNextAnswerTo(text: string): void {
    this.cutStatement = text
  }

  /** What `cutNextAnswerTo` waits for, until a statement holding it is sent. */
  private cutStatement: string | undefined
  /** Answers cut by `cutNextAnswerTo` so far. */
  answersCut = 0

  async close(): Promise<void> {
    for (const [client, upstream] of [...this.open, ...this.frozen]) {
      client.destroy()
      upstream.destroy()
    }
    await new Promise((resolve) => this.server.close(resolve))
  }

  private forward(client: Socket): void {
    const upstream = tcpConnect(Number(this.target.port || 5432), this.target.hostname)
    const pair: [Socket, Socket] = [client, upstream]
    this.open.add(pair)
    const close = () => {
      this.open.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', close).on('close', close)
    upstream.on('error', close).on('close', close)
    /** Set once a statement whose answer is cut went out on this connection. */
    let cutting = false
    client.on('data', (chunk: Buffer) => {
      if (this.cutStatement !== undefined && chunk.includes(this.cutStatement, 0, 'latin1')) {
        this.cutStatement = undefined
        cutting = true
      }
      upstream.write(chunk)
    })
    // The server's side is read message by message (a type byte, then a length that counts
    // itself), so that an answer can be told by its command tag.
    let pending: Buffer = Buffer.alloc(0)
    upstream.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      let end = 0
      while (pending.length - end >= 5) {
        const length = pending.readUInt32BE(end + 1)
        if (pending.length - end < 1 + length) break
        if (cutting && pending[end] === 0x5a) {
          // 'Z', ReadyForQuery: the statement's transaction is over; its answer goes nowhere.
          this.answersCut++
          close()
          return
        }
        const isCommit =
          pending[end] === 0x43 && // 'C', CommandComplete
          pending.toString('latin1', end + 5, end + 1 + length) === 'COMMIT\0'
        if (isCommit && this.cutCommit) {
          this.cutCommit = false
          this.commitsCut++
          client.write(pending.subarray(0, end))
          close()
          return
        }
        end += 1 + length
      }
      if (end > 0 && !cutting) client.write(pending.subarray(0, end))
      pending = pending.subarray(end)
    })
  }
}
