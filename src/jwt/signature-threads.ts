import { type KeyObject, verify } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

/**
 * Signature checks on threads of their own, handed over in batches.
 *
 * node:crypto's one-shot `verify` with a callback runs each check on the libuv thread pool, one job
 * and one thread wake-up per check: on a busy login path the event loop spent about 16 µs a login
 * on that hand-off alone (more than a tenth of its time), on a virtual machine where waking a
 * thread is dear. Here the checks a turn of the event loop produces go to a worker thread as one
 * message, and come back as one: `npm run bench`'s RS256 login went from about 140 to about 105 µs
 * of event-loop time a login. The pool stays free for password hashing and DNS lookups, so a flood
 * of password logins no longer queues signature checks behind its hashes either.
 *
 * A check that cannot run is a signature that does not verify (as with WebCrypto). A thread that
 * fails (it exits, answers what it was not asked, or owes an answer for 10 s) is given up: the
 * checks it held are run again on the libuv pool, and the next batch starts a new thread; after
 * MAX_FAILURES failures in a row every check stays on the pool for a minute. Each thread given up
 * is told to `onFailure` listeners (the app logs it) and counted in `stats` (the metrics).
 */

/** What `verify` takes for one algorithm besides the key: one object per algorithm, made once. */
export interface AlgorithmOptions {
  padding?: number
  saltLength?: number
  dsaEncoding?: 'ieee-p1363'
}

/** One check: node:crypto's `verify` arguments, with the signature still in base64url. */
export interface SignatureCheck {
  /** The digest (`null` for EdDSA). */
  hash: string | null
  options: AlgorithmOptions
  /** ECDSA: the length of the raw r||s signature, any other does not verify; -1 for the others. */
  bytes: number
  /** The JWS signing input, `header.payload` (base64url text). */
  input: string
  key: KeyObject
  /** base64url. */
  signature: string
}

/**
 * One batch as a thread receives it. A message of one object per check cost the event loop about
 * 20 µs for nine RS256 checks (each check's properties, and its signing input, a string joined
 * from two, flattened one by one), and about 3 µs as one text: the checks' strings go in `text`,
 * each behind `key,spec,inputLength,signatureLength;` (lengths, not separators: nothing a token
 * holds can shift the next check), and each distinct key and algorithm once per batch. KeyObjects
 * reach the thread as a copy; Buffers would carry their whole 8 KiB pool slab.
 */
export interface PackedChecks {
  count: number
  keys: KeyObject[]
  /** `verify`'s digest, options and the raw signature length (-1: any), as in SignatureCheck. */
  specs: [string | null, AlgorithmOptions, number][]
  text: string
}

/** A batch as one message (see PackedChecks). */
export function pack(checks: readonly SignatureCheck[]): PackedChecks {
  const keys: KeyObject[] = []
  const specs: PackedChecks['specs'] = []
  let text = ''
  for (const c of checks) {
    let k = keys.indexOf(c.key)
    if (k < 0) k = keys.push(c.key) - 1
    let s = specs.findIndex(([hash, options, bytes]) => {
      return hash === c.hash && options === c.options && bytes === c.bytes
    })
    if (s < 0) s = specs.push([c.hash, c.options, c.bytes]) - 1
    text += `${k},${s},${c.input.length},${c.signature.length};${c.input}${c.signature}`
  }
  return { count: checks.length, keys, specs, text }
}

/**
 * The thread's whole program (CommonJS, evaluated as given): each message is a batch (PackedChecks),
 * each answer a byte per check, 1 for a signature that verifies.
 */
const PROGRAM = `
const { parentPort } = require('node:worker_threads')
const { verify } = require('node:crypto')
function valid(spec, key, input, encoded) {
  try {
    const signature = Buffer.from(encoded, 'base64url')
    if (spec[2] >= 0 && signature.length !== spec[2]) return 0
    const options = { ...spec[1], key }
    return verify(spec[0], Buffer.from(input, 'latin1'), options, signature) ? 1 : 0
  } catch {
    return 0
  }
}
parentPort.on('message', ({ count, keys, specs, text }) => {
  const answers = new Uint8Array(count)
  let at = 0
  for (let i = 0; i < count; i++) {
    const head = text.indexOf(';', at)
    const [k, s, inputLength, signatureLength] = text.slice(at, head).split(',').map(Number)
    const input = text.slice(head + 1, head + 1 + inputLength)
    at = head + 1 + inputLength + signatureLength
    answers[i] = valid(specs[s], keys[k], input, text.slice(head + 1 + inputLength, at))
  }
  // Checks that do not fill the text exactly were not read as sent: no answer is trusted.
  parentPort.postMessage(at === text.length ? answers : new Uint8Array(0))
})
`

/** The same check on the libuv pool: the fallback while no thread can take it. */
function onPool(c: SignatureCheck): Promise<boolean> {
  const signature = Buffer.from(c.signature, 'base64url')
  if (c.bytes >= 0 && signature.length !== c.bytes) return Promise.resolve(false)
  const options = { ...c.options, key: c.key }
  return new Promise((resolve) => {
    try {
      verify(c.hash, Buffer.from(c.input, 'latin1'), options, signature, (err, ok) =>
        resolve(!err && ok),
      )
    } catch {
      resolve(false)
    }
  })
}

interface Pending {
  check: SignatureCheck
  resolve: (valid: boolean) => void
}

/** Why a thread was given up (the label of `ctrl_signature_thread_failures_total`). */
export const THREAD_FAILURE_REASONS = [
  'spawn', // it could not be started
  'exit', // it ended
  'error', // it threw
  'unreadable', // it sent a message that could not be read
  'wrong_answer', // it answered anything but one byte per check of its oldest batch
  'deadline', // it owed an answer for deadlineMs
] as const
export type ThreadFailureReason = (typeof THREAD_FAILURE_REASONS)[number]

/** One thread given up, for the log and the metrics. */
export interface ThreadFailure {
  reason: ThreadFailureReason
  /** `exit`: the thread's exit code; `error`: the error's code, when it has one. */
  code?: number | string
  /** Checks it owed, now run on the libuv pool. */
  owed: number
  /** Set when this failure sends every check to the pool for a while: how long (ms). */
  poolForMs?: number
}

interface Thread {
  worker: Worker
  /** Batches sent and not answered yet, oldest first: a thread answers in order. */
  batches: Pending[][]
  /** Checks in those batches. */
  checks: number
  /** Runs while an answer is owed: a thread silent for deadlineMs is given up. */
  deadline: NodeJS.Timeout | undefined
  /** Given up: nothing more goes to it, and whatever it still sends is ignored. */
  gone: boolean
}

/** Failures in a row after which checks stay on the libuv pool for retryAfterMs. */
const MAX_FAILURES = 3
/** Checks a thread may be behind before the next batch goes to another; larger batches are split. */
const SPREAD_AT = 16

export interface SignatureThreadsOptions {
  /** Starts a thread (tests give threads that fail, hang or answer wrongly). */
  spawn?: () => Worker
  /** How long a thread that owes an answer may stay silent before it is given up (10 s). */
  deadlineMs?: number
  /** How long checks stay on the pool after MAX_FAILURES failures in a row (1 min). */
  retryAfterMs?: number
}

export class SignatureThreads {
  private readonly threads: Thread[] = []
  private queue: Pending[] = []
  private scheduled = false
  private failures = 0
  /** While failures >= MAX_FAILURES: when threads are tried again (performance.now()). */
  private retryAt = 0
  private readonly spawn: () => Worker
  private readonly deadlineMs: number
  private readonly retryAfterMs: number
  private readonly listeners = new Set<(failure: ThreadFailure) => void>()
  /** Checks answered so far by a thread and by the libuv pool, and threads given up by reason. */
  readonly stats = {
    thread: 0,
    pool: 0,
    failures: Object.fromEntries(THREAD_FAILURE_REASONS.map((r) => [r, 0])) as Record<
      ThreadFailureReason,
      number
    >,
  }

  /** `size`: how many threads at most (they start as checks arrive). */
  constructor(
    private readonly size: number,
    options: SignatureThreadsOptions = {},
  ) {
    if (!(size >= 1)) throw new RangeError('a signature check needs at least one thread')
    this.spawn =
      options.spawn ?? (() => new Worker(PROGRAM, { eval: true, stdout: false, stderr: false }))
    this.deadlineMs = options.deadlineMs ?? 10_000
    this.retryAfterMs = options.retryAfterMs ?? 60_000
  }

  /** Resolves with whether the signature verifies; never rejects. */
  check(check: SignatureCheck): Promise<boolean> {
    if (this.onPool()) {
      this.stats.pool++
      return onPool(check)
    }
    return new Promise((resolve) => {
      this.queue.push({ check, resolve })
      if (this.scheduled) return
      this.scheduled = true
      // After the poll phase: every check the sockets' data of this turn produced goes in one batch.
      setImmediate(() => this.flush())
    })
  }

  /** Calls `listener` for every thread given up (to log it); returns what stops the calls. */
  onFailure(listener: (failure: ThreadFailure) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Threads running now (for tests). */
  get running(): number {
    return this.threads.length
  }

  /** Stops every thread (tests); the checks they held finish on the pool. */
  async stop(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.worker.terminate()))
  }

  /** Whether checks go to the pool now: threads failed MAX_FAILURES times in a row, lately. */
  private onPool(): boolean {
    if (this.failures < MAX_FAILURES) return false
    if (performance.now() < this.retryAt) return true
    this.failures = MAX_FAILURES - 1 // one more try; its failure sends checks back to the pool
    return false
  }

  /** A thread failed: tells the listeners, and after MAX_FAILURES in a row keeps to the pool. */
  private failed(reason: ThreadFailureReason, owed: Pending[][], code?: number | string): void {
    let checks = 0
    for (const batch of owed) checks += batch.length
    const failure: ThreadFailure = { reason, ...(code === undefined ? {} : { code }), owed: checks }
    this.stats.failures[reason]++
    // A thread that ends or errs while it owes nothing failed too, but no check was held up.
    if (checks > 0 || reason === 'spawn') {
      this.failures++
      if (this.failures >= MAX_FAILURES) {
        this.retryAt = performance.now() + this.retryAfterMs
        failure.poolForMs = this.retryAfterMs
      }
    }
    for (const batch of owed) this.allOnPool(batch)
    for (const listener of this.listeners) {
      try {
        listener(failure)
      } catch {
        // A listener's failure is not the check's.
      }
    }
  }

  private allOnPool(batch: Pending[]): void {
    this.stats.pool += batch.length
    for (const p of batch) void onPool(p.check).then(p.resolve)
  }

  private flush(): void {
    this.scheduled = false
    const batch = this.queue
    this.queue = []
    // A large batch (a burst of slow ES512 checks) is shared among the threads.
    for (let at = 0; at < batch.length; at += SPREAD_AT) {
      const part = batch.slice(at, at + SPREAD_AT)
      if (this.onPool()) this.allOnPool(part)
      else this.send(part)
    }
  }

  private send(batch: Pending[]): void {
    let thread: Thread
    try {
      thread = this.pick()
    } catch {
      // No thread could be started (the process is out of memory or threads, say).
      this.failed('spawn', [batch])
      return
    }
    try {
      thread.worker.postMessage(pack(batch.map((p) => p.check)))
    } catch {
      // A job the thread cannot receive (a key that cannot be copied): checked on the pool.
      this.allOnPool(batch)
      return
    }
    if (thread.checks === 0) {
      thread.worker.ref() // an answer is due: keep the process up for it
      thread.deadline = setTimeout(() => this.giveUp(thread, 'deadline'), this.deadlineMs)
      thread.deadline.unref()
    }
    thread.batches.push(batch)
    thread.checks += batch.length
  }

  /**
   * The first thread less than SPREAD_AT checks behind: RS256 and ES256 logins keep one thread
   * busy and asleep less often (every batch to an idle thread wakes it). Once every thread is that
   * far behind (ES384 and ES512 checks take 0.4 and 1 ms each), a new one starts while there are
   * fewer than `size`, or the least behind takes the batch.
   */
  private pick(): Thread {
    for (const t of this.threads) if (t.checks < SPREAD_AT) return t
    if (this.threads.length < this.size) return this.start()
    let best = this.threads[0] as Thread // size >= 1, and every thread started is listed
    for (const t of this.threads) if (t.checks < best.checks) best = t
    return best
  }

  private start(): Thread {
    const worker = this.spawn()
    worker.unref()
    const thread: Thread = { worker, batches: [], checks: 0, deadline: undefined, gone: false }
    this.threads.push(thread)
    worker.on('message', (answers: unknown) => {
      if (thread.gone) return
      const batch = thread.batches[0]
      // Anything but one byte per check of the oldest batch: the order is lost, the thread goes.
      if (!(answers instanceof Uint8Array) || answers.length !== batch?.length) {
        this.giveUp(thread, 'wrong_answer')
        return
      }
      thread.batches.shift()
      this.failures = 0
      thread.checks -= batch.length
      this.stats.thread += batch.length
      if (thread.checks === 0) {
        clearTimeout(thread.deadline)
        worker.unref()
      } else thread.deadline?.refresh()
      for (let i = 0; i < batch.length; i++) batch[i]?.resolve(answers[i] === 1)
    })
    worker.on('messageerror', () => this.giveUp(thread, 'unreadable'))
    worker.on('error', (err: unknown) => this.giveUp(thread, 'error', errorCode(err)))
    worker.on('exit', (exitCode: number) => this.giveUp(thread, 'exit', exitCode))
    return thread
  }

  /** Stops using a thread: the checks it owes are checked on the pool, and it is ended. */
  private giveUp(thread: Thread, reason: ThreadFailureReason, code?: number | string): void {
    if (thread.gone) return
    thread.gone = true
    clearTimeout(thread.deadline)
    const at = this.threads.indexOf(thread)
    if (at >= 0) this.threads.splice(at, 1)
    const owed = thread.batches
    thread.batches = []
    thread.checks = 0
    thread.worker.unref()
    void thread.worker.terminate()
    this.failed(reason, owed, code)
  }
}

/** A code that says why a thread erred (`ERR_WORKER_OUT_OF_MEMORY`, say); never its message. */
function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/**
 * Logs the threads `threads` gives up at warn (reason, code, checks owed, time on the pool), at
 * most one line per `everyMs`: a line says how many more failed since the previous one
 * (`alsoFailed`), so a thread that dies after every batch cannot flood the log (the metrics count
 * every failure). Returns what stops it.
 */
export function logThreadFailures(
  threads: SignatureThreads,
  log: { warn: (failure: ThreadFailure & { alsoFailed?: number }, message: string) => void },
  everyMs = 60_000,
): () => void {
  let lastAt = Number.NEGATIVE_INFINITY
  let since = 0
  return threads.onFailure((failure) => {
    const now = performance.now()
    if (now - lastAt < everyMs) {
      since++
      return
    }
    lastAt = now
    log.warn(
      since > 0 ? { ...failure, alsoFailed: since } : failure,
      'signature thread given up; its checks run on the libuv thread pool',
    )
    since = 0
  })
}

/**
 * The process's threads: as many as cores, at most four. One takes every check while it keeps up
 * (an RS256 check takes some 20 µs, an ES256 one 60 µs); more start only while slower checks
 * (ES384, ES512: 0.4 and 1 ms) pile up, so that they use every core, as on libuv's pool.
 */
export const signatureThreads = new SignatureThreads(
  Math.max(1, Math.min(4, availableParallelism())),
)
