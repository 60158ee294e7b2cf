import type { KeyObject } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { parseSignerCertificate } from '../signers/certificate.js'
import type { SignerRecord } from '../store/contract.js'
import type { JwksFetcher } from './jwks-fetch.js'
import { fetchErrorText, JwksKeySet, type KeySetStatus } from './jwks-key-set.js'

/** Where a signer's keys come from, and how fresh they are. */
export interface SignerKeyStatus extends KeySetStatus {
  source: 'certificate' | 'jwks'
}

/** How long a failed reread of a signer waits before it is tried again. */
const RETRY_MS = 1000

/** A signer with its key material ready for verification. */
export interface SignerEntry {
  signer: SignerRecord
  /** Certificate signers: the public key, imported once. */
  certKey?: KeyObject
  /** JWKS signers: the cached key set of the endpoint. */
  keySet?: JwksKeySet
}

/** A change to the set of signers, for caches that must follow it at once. */
export type SignerChange =
  | { type: 'upsert'; signer: SignerRecord }
  | { type: 'delete'; signer: SignerRecord }

/** Where signers are reread when another instance changed them or changes may have been missed. */
export interface SignerSource {
  byId(id: string): Promise<SignerRecord | undefined>
  byIssuer(issuer: string): Promise<SignerRecord | undefined>
  all(): Promise<SignerRecord[]>
  /** True while changes may have been missed: every lookup rereads its signer. */
  stale(): boolean
}

export interface SignerKeysOptions {
  source?: SignerSource
  fetcher: JwksFetcher
  clock: () => Date
  cooldownMs: number
  maxAgeMs: number
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }
}

/**
 * Every signer by issuer, with imported keys. It follows signer changes synchronously, so the very
 * next verification sees a disabled signer, a new issuer, audience, certificate or endpoint.
 */
export class SignerKeys {
  private readonly byIssuer = new Map<string, SignerEntry>()
  private readonly byId = new Map<string, SignerEntry>()
  private readonly listeners: ((signerId: string) => void)[] = []
  private readonly pending = new Set<Promise<void>>()
  private readonly retiredListeners: ((signerId: string, kids: string[]) => void)[] = []
  private readonly fetchListeners: ((signerId: string, ok: boolean) => void)[] = []
  /**
   * Rereads started so far, numbered in the order they started: a read that started later saw the
   * store as it was then or later, so an earlier read that ends after it must not undo it.
   */
  private reads = 0
  /** Per signer, the number of the read (or local change) applied last (see `settle`). */
  private readonly appliedRead = new Map<string, number>()
  /** Signers whose reread failed: until a retry succeeds, every lookup rereads its signer. */
  private readonly unsettled = new Set<string>()
  /** A reread of every signer failed: the same, until a retry of it succeeds. */
  private allUnsettled = false
  private readonly retries = new Map<string, NodeJS.Timeout>()
  /** Rereads sent to the store and not answered yet. */
  private readsUnderWay = 0
  private closed = false

  constructor(private readonly options: SignerKeysOptions) {}

  /** Loads the stored signers; JWKS fetches start in the background. */
  load(signers: SignerRecord[]): void {
    for (const signer of signers) this.upsert(signer)
  }

  /** Called with a signer id whenever that signer's verification inputs change. */
  onInvalidate(listener: (signerId: string) => void): void {
    this.listeners.push(listener)
  }

  /** Called when a successful JWKS fetch no longer holds kids (or holds other keys under them). */
  onKidsRetired(listener: (signerId: string, kids: string[]) => void): void {
    this.retiredListeners.push(listener)
  }

  /** Called after every JWKS fetch of a signer, successful or not. */
  onFetched(listener: (signerId: string, ok: boolean) => void): void {
    this.fetchListeners.push(listener)
  }

  /** Whether a token signed with this kid can still verify with the signer's current keys. */
  hasKid(signerId: string, kid: string): boolean {
    const entry = this.byId.get(signerId)
    if (!entry) return false
    if (entry.certKey) return entry.signer.kid === kid
    return entry.keySet?.hasKid(kid) ?? false
  }

  /** The key status of a signer, or undefined for an unknown id. */
  status(signerId: string): SignerKeyStatus | undefined {
    const entry = this.byId.get(signerId)
    if (!entry) return undefined
    if (entry.keySet) return { source: 'jwks', ...entry.keySet.status() }
    if (entry.signer.jwksEndpoint !== null) {
      // Disabled: no key set, nothing fetched.
      const none = { kids: [], lastFetchAt: null, lastFetchError: null, nextRefreshAt: null }
      return { source: 'jwks', ...none }
    }
    const { kid } = entry.signer
    return {
      source: 'certificate',
      kids: kid === null ? [] : [kid],
      lastFetchAt: null,
      lastFetchError: null,
      nextRefreshAt: null,
    }
  }

  /**
   * Fetches a JWKS signer's keys now, whatever the cooldown (joining a fetch already under way),
   * and answers the status once it ended. Undefined for an unknown id.
   */
  async refresh(signerId: string): Promise<SignerKeyStatus | undefined> {
    await this.byId.get(signerId)?.keySet?.refresh()
    return this.status(signerId)
  }

  get(issuer: string): SignerEntry | undefined {
    return this.byIssuer.get(issuer)
  }

  /**
   * The signer of an issuer as stored now: waits for rereads under way, and while changes may have
   * been missed (or a reread of this issuer's signer failed) rereads the signer itself. Rejects
   * when that read fails.
   */
  async resolve(issuer: string): Promise<SignerEntry | undefined> {
    if (this.pending.size > 0) await Promise.all(this.pending)
    const source = this.options.source
    if (source && this.mustReread(source, issuer)) {
      const read = this.startRead()
      let stored: SignerRecord | undefined
      try {
        stored = await source.byIssuer(issuer)
      } finally {
        this.readsUnderWay--
      }
      const entry = this.byIssuer.get(issuer)
      if (entry && entry.signer.id !== stored?.id && this.settle(entry.signer.id, read))
        this.change({ type: 'delete', signer: entry.signer })
      if (stored && this.settle(stored.id, read)) this.reconcile(stored)
    }
    return this.byIssuer.get(issuer)
  }

  /**
   * Whether a lookup of `issuer` must read its signer from the store: changes may have been missed,
   * or a reread failed of this issuer's signer, of every signer, or (for an issuer this instance
   * does not know) of any signer, which may have taken this issuer since.
   */
  private mustReread(source: SignerSource, issuer: string): boolean {
    if (source.stale() || this.allUnsettled) return true
    if (this.unsettled.size === 0) return false
    const entry = this.byIssuer.get(issuer)
    return entry === undefined || this.unsettled.has(entry.signer.id)
  }

  /**
   * Rereads one signer (another instance changed it); lookups wait for it. When the read fails,
   * lookups of that signer reread it themselves until a retry (every RETRY_MS, not waited for)
   * succeeds: what this instance holds of it may be a version the store no longer has (a signer
   * disabled elsewhere).
   */
  reload(id: string, waited = true): Promise<void> {
    const source = this.options.source
    if (!source || this.closed) return Promise.resolve()
    const read = this.startRead()
    const p: Promise<void> = source
      .byId(id)
      .finally(() => this.readsUnderWay--)
      .then((stored) => {
        this.unsettled.delete(id)
        if (!this.settle(id, read)) return
        const entry = this.byId.get(id)
        if (stored) this.reconcile(stored)
        else if (entry) this.change({ type: 'delete', signer: entry.signer })
      })
      .catch((err: unknown) => {
        const first = !this.unsettled.has(id)
        this.unsettled.add(id)
        this.retry(id, err, first, () => this.reload(id, false))
      })
      .finally(() => this.pending.delete(p))
    if (waited) this.pending.add(p)
    return p
  }

  /** Rereads every signer (notifications were lost and are back); lookups wait for it. */
  reloadAll(waited = true): Promise<void> {
    const source = this.options.source
    if (!source || this.closed) return Promise.resolve()
    const read = this.startRead()
    const p: Promise<void> = source
      .all()
      .finally(() => this.readsUnderWay--)
      .then((all) => {
        this.allUnsettled = false
        const ids = new Set(all.map((s) => s.id))
        for (const entry of [...this.byId.values()]) {
          const { id } = entry.signer
          if (!ids.has(id) && this.settle(id, read))
            this.change({ type: 'delete', signer: entry.signer })
        }
        for (const stored of all) if (this.settle(stored.id, read)) this.reconcile(stored)
      })
      .catch((err: unknown) => {
        const first = !this.allUnsettled
        this.allUnsettled = true
        this.retry('*', err, first, () => this.reloadAll(false))
      })
      .finally(() => this.pending.delete(p))
    if (waited) this.pending.add(p)
    return p
  }

  private startRead(): number {
    this.readsUnderWay++
    return ++this.reads
  }

  /**
   * Whether a read numbered `read` may apply what it saw of a signer: not when a read that started
   * later, or a change made here, was applied to it already. Records it when it may.
   */
  private settle(id: string, read: number): boolean {
    if ((this.appliedRead.get(id) ?? 0) > read) return false
    this.appliedRead.set(id, read)
    return true
  }

  /**
   * Tries a failed reread again in RETRY_MS, one retry at a time per signer, until it succeeds or
   * this closes; the first failure of a series is logged.
   */
  private retry(id: string, err: unknown, first: boolean, again: () => Promise<void>): void {
    if (this.closed || this.retries.has(id)) return
    if (first) {
      this.options.log.warn(
        {
          signerId: id === '*' ? undefined : id,
          error: err instanceof Error ? err.message : String(err),
          retryEveryMs: RETRY_MS,
        },
        'signer reread failed; lookups read the store until it succeeds',
      )
    }
    const timer = setTimeout(() => {
      this.retries.delete(id)
      if (!this.closed) void again()
    }, RETRY_MS)
    timer.unref()
    this.retries.set(id, timer)
  }

  /**
   * Applies a stored signer unless this instance already holds it as stored: compared whole, not
   * by `updatedAt` alone (two instances' changes may share a millisecond).
   */
  private reconcile(stored: SignerRecord): void {
    const entry = this.byId.get(stored.id)
    if (entry && isDeepStrictEqual(entry.signer, stored)) return
    this.change({ type: 'upsert', signer: stored })
  }

  getById(id: string): SignerEntry | undefined {
    return this.byId.get(id)
  }

  /** Every signer this instance knows, enabled or not, with its key material. */
  all(): SignerEntry[] {
    return [...this.byId.values()]
  }

  enabled(): SignerRecord[] {
    return [...this.byId.values()].map((e) => e.signer).filter((s) => s.enabled)
  }

  /**
   * A change made through this instance: applied at once, and no reread under way undoes it. A
   * reread under way may have started after another instance changed the signer again (its
   * notification can come in before this instance applies its own commit): one more reread, which
   * starts after both, settles which version is the store's.
   */
  apply(change: SignerChange): void {
    this.appliedRead.set(change.signer.id, ++this.reads)
    this.change(change)
    if (this.readsUnderWay > 0) void this.reload(change.signer.id)
  }

  private change(change: SignerChange): void {
    if (change.type === 'delete') this.remove(change.signer.id)?.keySet?.close()
    else this.upsert(change.signer)
    for (const listener of this.listeners) listener(change.signer.id)
  }

  private remove(id: string): SignerEntry | undefined {
    const entry = this.byId.get(id)
    if (!entry) return undefined
    this.byId.delete(id)
    if (this.byIssuer.get(entry.signer.issuer) === entry) this.byIssuer.delete(entry.signer.issuer)
    return entry
  }

  private upsert(signer: SignerRecord): void {
    const old = this.remove(signer.id)
    const entry: SignerEntry = { signer }
    if (signer.certPem !== null) {
      // The key kept is the one made from the certificate of the version this instance holds, not
      // from the version a change says it replaced: that one may be another instance's change this
      // instance has not heard of yet (a rotation), and its key would otherwise outlive it.
      const key =
        old?.certKey && old.signer.certPem === signer.certPem
          ? old.certKey
          : this.certKey(signer, signer.certPem)
      if (key) entry.certKey = key
    }
    // A disabled signer verifies nothing, so it fetches nothing: its key set is made (and fetched
    // at once) when it is enabled, and closed when it is disabled.
    if (signer.jwksEndpoint !== null && signer.enabled) {
      if (old?.keySet && old.keySet.url === signer.jwksEndpoint) {
        entry.keySet = old.keySet
      } else {
        entry.keySet = this.keySet(signer, signer.jwksEndpoint)
        void entry.keySet.refresh()
      }
    }
    if (old?.keySet && old.keySet !== entry.keySet) old.keySet.close()
    this.byId.set(signer.id, entry)
    this.byIssuer.set(signer.issuer, entry)
  }

  /**
   * The public key of a stored certificate signer, or undefined (with a warning) when its
   * certificate is no longer accepted, as one with a weak RSA exponent stored before that rule.
   */
  private certKey(signer: SignerRecord, certPem: string): KeyObject | undefined {
    try {
      return parseSignerCertificate(certPem).publicKey
    } catch (err) {
      const reason = err instanceof Error ? (err.cause ?? err.message) : String(err)
      this.options.log.warn(
        { signerId: signer.id, reason },
        'signer certificate refused; it verifies nothing',
      )
      return undefined
    }
  }

  private keySet(signer: SignerRecord, jwksEndpoint: string): JwksKeySet {
    const { fetcher, clock, cooldownMs, maxAgeMs, log } = this.options
    return new JwksKeySet(jwksEndpoint, {
      fetcher,
      clock,
      cooldownMs,
      maxAgeMs,
      onFetch: (result) => {
        for (const listener of this.fetchListeners) listener(signer.id, result.ok)
        if (result.ok) {
          const { keys, retiredKids, refused } = result
          log.info({ signerId: signer.id, keys, retiredKids }, 'jwks fetched')
          for (const { kid, reason } of refused) {
            log.warn({ signerId: signer.id, kid, reason }, 'jwks key refused; it verifies nothing')
          }
          if (retiredKids.length === 0) return
          for (const listener of this.retiredListeners) listener(signer.id, retiredKids)
        } else {
          log.warn(
            { signerId: signer.id, reason: fetchErrorText(result.error) },
            'jwks fetch failed; keeping the keys already fetched',
          )
        }
      },
    })
  }

  close(): void {
    this.closed = true
    for (const timer of this.retries.values()) clearTimeout(timer)
    this.retries.clear()
    for (const entry of this.byId.values()) entry.keySet?.close()
  }
}
