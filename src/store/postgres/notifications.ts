import pg from 'pg'
import type { FeedEvent, StoreChange } from '../contract.js'
import { clientConfig, type PgSettings } from './connection.js'

export const CHANNEL = 'ctrl_changes'
/**
 * How often the connection is pinged, and how long a ping may go unanswered: a ping still waiting
 * when the next is due means the connection is lost. A connection that went silent (the network
 * dropping its packets, the server's backend stopped) neither fails nor delivers a notification
 * until the driver's query timeout (the statement timeout plus a second); within that time the
 * instance would trust caches that may have missed changes. So a change is followed within
 * about a second even then: the last answered ping is at most one interval old, the missing one is
 * noticed one interval later.
 */
export const PING_INTERVAL_MS = 500
const MAX_BACKOFF_MS = 2000

/**
 * Listens for other instances' changes on one dedicated connection. While that connection is down,
 * the instance may miss a change, so it reports `stale` at once (callers then bypass every cache)
 * and `fresh` once it listens again (callers reload their caches). A ping every PING_INTERVAL_MS
 * notices a connection that died without a word.
 */
export class ChangeListener {
  private client: pg.Client | undefined
  private closed = false
  private timer: NodeJS.Timeout | undefined
  private backoff = 100
  private connected = false
  /** When the server last answered on this connection (performance.now()). */
  private answeredAt = 0
  private readonly listeners: ((event: FeedEvent) => void)[] = []

  constructor(
    private readonly settings: PgSettings,
    /** This instance's id: its own notifications are marked `own`. */
    private readonly instanceId: string,
    private readonly log: {
      warn(obj: object, msg: string): void
      info(obj: object, msg: string): void
    },
  ) {}

  get stale(): boolean {
    return !this.connected
  }

  /** Whether the server answered on this connection within the last `ms` milliseconds. */
  answeredWithin(ms: number): boolean {
    return this.connected && !this.closed && performance.now() - this.answeredAt <= ms
  }

  /**
   * Whether the server answers on this connection: at once when it answered within the last two
   * ping intervals (a busy event loop can delay the timer's ping), else after a ping of its own
   * answered within `waitMs`.
   */
  async answers(waitMs: number): Promise<boolean> {
    if (this.answeredWithin(2 * PING_INTERVAL_MS)) return true
    const client = this.client
    if (!client || !this.connected || this.closed) return false
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs)
    })
    const answered = client.query('SELECT 1').then(
      () => {
        this.answeredAt = performance.now()
        return true
      },
      () => false, // the timer's ping finds the connection lost
    )
    try {
      return await Promise.race([answered, late])
    } finally {
      clearTimeout(timer)
    }
  }

  on(listener: (event: FeedEvent) => void): void {
    this.listeners.push(listener)
  }

  private emit(event: FeedEvent): void {
    for (const listener of this.listeners) listener(event)
  }

  /** Connects once; resolves when listening (start-up waits for it), rejects if it cannot. */
  async start(): Promise<void> {
    await this.connect()
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      ...clientConfig(this.settings),
      application_name: 'ext-jwt-controller-listen',
    })
    client.on('error', () => this.lost(client, 'connection error'))
    client.on('end', () => this.lost(client, 'connection ended'))
    client.on('notification', (msg) => this.received(msg.payload))
    try {
      await client.connect()
      await client.query(`LISTEN ${CHANNEL}`)
    } catch (err) {
      await client.end().catch(() => {})
      throw err
    }
    if (this.closed) {
      await client.end().catch(() => {})
      return
    }
    this.client = client
    this.backoff = 100
    this.answeredAt = performance.now()
    const wasStale = !this.connected
    this.connected = true
    // One ping at a time: one still unanswered when the next is due means the connection is lost
    // (a second would only queue behind it). The verdict waits for the loop's pending I/O: after a
    // long stretch of work the timers run first, and the answer may be waiting unread.
    let pinging = false
    this.timer = setInterval(() => {
      if (pinging) {
        setImmediate(() => {
          if (pinging) this.lost(client, 'ping unanswered')
        })
        return
      }
      pinging = true
      client.query('SELECT 1').then(
        () => {
          pinging = false
          this.answeredAt = performance.now()
        },
        () => this.lost(client, 'ping failed'),
      )
    }, PING_INTERVAL_MS)
    this.timer.unref()
    if (wasStale) this.emit({ type: 'fresh' })
  }

  private received(payload: string | undefined): void {
    if (!payload) return
    let parsed: { from?: unknown; change?: StoreChange }
    try {
      parsed = JSON.parse(payload) as { from?: unknown; change?: StoreChange } // our own format
    } catch {
      return
    }
    if (!parsed.change) return
    // This instance's own changes come back too: applied here already when their commit answered,
    // but a commit whose answer was lost (its connection dropped, or the driver gave up waiting
    // while the server committed) was stored all the same, and only this tells the instance.
    this.emit({ type: 'change', change: parsed.change, own: parsed.from === this.instanceId })
  }

  private lost(client: pg.Client, reason: string): void {
    if (this.client !== client) return
    this.client = undefined
    clearInterval(this.timer)
    // With a ping unanswered, the driver destroys the socket rather than wait for the server.
    client.end().catch(() => {})
    if (this.connected) {
      this.connected = false
      this.log.warn({ reason }, 'change notifications lost; caches bypassed until they are back')
      this.emit({ type: 'stale' })
    }
    this.reconnect()
  }

  private reconnect(): void {
    if (this.closed) return
    const delay = this.backoff
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS)
    setTimeout(() => {
      if (this.closed) return
      this.connect().then(
        () => this.log.info({}, 'change notifications back'),
        () => this.reconnect(),
      )
    }, delay).unref()
  }

  /** The payload a unit of work sends with pg_notify. */
  payload(change: StoreChange): string {
    return JSON.stringify({ from: this.instanceId, change })
  }

  async close(): Promise<void> {
    this.closed = true
    this.connected = false
    clearInterval(this.timer)
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => {})
  }
}
