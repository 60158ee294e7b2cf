/**
 * Where the process stands in its shutdown. `draining`: readiness fails so that load balancers
 * stop sending new requests, while every route still serves; `closing`: the listener no longer
 * accepts, and each response tells its client to close the connection.
 */
export class Lifecycle {
  phase: 'serving' | 'draining' | 'closing' = 'serving'

  /** False from the first shutdown signal on: the readiness check answers 503. */
  get ready(): boolean {
    return this.phase === 'serving'
  }

  get closing(): boolean {
    return this.phase === 'closing'
  }
}

/**
 * After the listener stops, how long a connection still open may bring one more request (served,
 * with `Connection: close`) before the idle ones are closed; shutdown goes on as soon as every
 * connection has ended. A kept-alive client's next request may already be on its way when the
 * listener stops: Node counts its connection idle until it has read the request, and closing the
 * connection then resets the request (every busy keep-alive connection, under load). A client
 * behind a layer-4 balancer, whose connection stays pinned to this instance through the delay,
 * opens its next connection to another instance after this answer.
 */
export const CLOSE_GRACE_MS = 1_000

export interface ShutdownOptions {
  lifecycle: Lifecycle
  /** How long readiness fails before the listener stops accepting (skipped on SIGINT). */
  delayMs: number
  /**
   * How long in-flight requests may take once the listener stopped and its grace (CLOSE_GRACE_MS)
   * is over, before their connections end.
   */
  timeoutMs: number
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }
  /**
   * Stops accepting and leaves open connections be; resolves when all of them ended or after
   * `graceMs`, whichever comes first.
   */
  stopAccepting: (graceMs: number) => Promise<void>
  /** Closes idle connections, waits for in-flight requests, closes the store. */
  close: () => Promise<void>
  /** Ends every connection still open (requests past the timeout). */
  forceClose: () => void
}

/**
 * The shutdown order load balancers expect (Kubernetes, HAProxy, nginx): fail readiness first,
 * keep serving for `delayMs` while the balancer notices, then stop accepting and drain. Returns the
 * signal handler; it resolves when everything is closed. A repeated SIGTERM (a signal sent to the
 * process group arrives directly and through `npm start`) keeps the order; SIGINT, an operator's
 * Ctrl-C, skips what is left of the delay.
 */
export function shutdownInOrder(o: ShutdownOptions): (signal: string) => Promise<void> {
  let done: Promise<void> | undefined
  let skipDelay = () => {}
  return (signal) => {
    if (signal === 'SIGINT') skipDelay()
    if (done) {
      o.log.info({ signal }, 'shutdown already under way')
      return done
    }
    const started = Date.now()
    o.lifecycle.phase = 'draining'
    const delayMs = signal === 'SIGINT' ? 0 : o.delayMs
    o.log.info({ signal, delayMs }, 'shutting down: readiness fails, still serving')
    done = (async () => {
      if (delayMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delayMs)
          skipDelay = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      o.lifecycle.phase = 'closing'
      o.log.info({ ms: Date.now() - started }, 'shutting down: no longer accepting connections')
      await o.stopAccepting(CLOSE_GRACE_MS)
      const timer = setTimeout(() => {
        o.log.warn({ timeoutMs: o.timeoutMs }, 'requests still running at the shutdown timeout')
        o.forceClose()
      }, o.timeoutMs)
      try {
        await o.close()
      } finally {
        clearTimeout(timer)
      }
      o.log.info({ ms: Date.now() - started }, 'shut down')
    })()
    return done
  }
}
