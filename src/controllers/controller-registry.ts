import { newId } from '../ids.js'
import type { ControllerRecord, Store } from '../store/contract.js'
import type { ListPage } from '../store/query/list-query.js'
import { type ListParams, parseListQuery } from '../store/query/list-query.js'
import { CONTROLLER_LIST_SPEC } from '../store/sqlite/controller-repository.js'

/** The API addresses of one controller, by API name (OpenZiti's `apiAddressList`). */
export type ApiAddresses = Record<string, { url: string; version: string }[]>

/**
 * The client view of one controller, the shape enrollment answers carry (OpenZiti 2.1
 * `controllers`): what `ControllerDirectory` in the enrollment code expects.
 */
export interface ControllerSummary {
  id: string
  name: string
  apiAddresses: ApiAddresses
  certPem: string
  fingerprint: string
  isOnline: boolean
}

/** One controller as the lists show it (OpenZiti's `controllerDetail`). */
export interface ControllerView extends ControllerSummary {
  ctrlAddress: null
  isPreferredLeader: boolean
  lastJoinedAt: string
  createdAt: string
  updatedAt: string
  tags: Record<string, unknown>
}

/** This instance, as it registers itself. */
export interface ControllerSelf {
  name: string
  /** Base URL without a trailing slash (`https://ctrl-1.example:1280`). */
  advertiseUrl: string
  certPem: string
  fingerprint: string
}

export interface ControllerRegistryOptions {
  store: Store
  clock: () => Date
  self: ControllerSelf
  /** How often the heartbeat is refreshed; readers call a row offline after three periods. */
  heartbeatMs: number
  log: { warn(obj: object, msg: string): void }
}

/** How many heartbeat periods may pass before a controller shows `isOnline: false`. */
export const MISSED_HEARTBEATS = 3

/** The addresses of both edge APIs under a base URL. */
export function apiAddresses(baseUrl: string): ApiAddresses {
  return {
    'edge-client': [{ url: `${baseUrl}/edge/client/v1`, version: 'v1' }],
    'edge-management': [{ url: `${baseUrl}/edge/management/v1`, version: 'v1' }],
  }
}

/**
 * The controllers list: this instance registers itself in the shared store at `start`, refreshes
 * its heartbeat in the background, and removes itself at `stop` (a clean shutdown); every instance
 * reads the same rows, so each sees the others.
 */
export class ControllerRegistry {
  readonly filterableFields = Object.keys(CONTROLLER_LIST_SPEC.filterable)
  private id: string | undefined
  private timer: NodeJS.Timeout | undefined
  /** The heartbeat under way, if any (`stop` waits for it). */
  private beating: Promise<void> | undefined
  private stopped = false

  constructor(private readonly o: ControllerRegistryOptions) {}

  /** Registers this instance (replacing a row of its name left by a crash) and starts beating. */
  async start(): Promise<void> {
    await this.register()
    this.timer = setInterval(() => {
      this.beat().catch((err: unknown) => this.o.log.warn({ err }, 'controller heartbeat failed'))
    }, this.o.heartbeatMs)
    this.timer.unref()
  }

  /** Refreshes this instance's heartbeat; registers again when its row was removed meanwhile. */
  async beat(): Promise<void> {
    // One at a time (a store slower than the interval): `stop` then waits for the only one.
    if (this.beating) return this.beating
    const id = this.id
    if (this.stopped || id === undefined) return
    const run = (async () => {
      const at = this.o.clock().toISOString()
      const beaten = await this.o.store.repos.controllers.heartbeat(id, at)
      // Not after `stop` (the instance left the list) or `moveTo` (registered under its new name).
      if (!beaten && !this.stopped && this.id === id) await this.register()
    })()
    this.beating = run
    try {
      await run
    } finally {
      if (this.beating === run) this.beating = undefined
    }
  }

  /**
   * Registers under a new name or address (listening on port 0 picks the port only after start):
   * the row of the old name is removed, so the list never shows the instance twice.
   */
  async moveTo(self: ControllerSelf): Promise<void> {
    const { name, advertiseUrl } = this.o.self
    if (self.name === name && self.advertiseUrl === advertiseUrl) return
    this.o.self = self
    if (this.id !== undefined) await this.o.store.repos.controllers.delete(this.id)
    await this.register()
  }

  /**
   * Stops beating and leaves the list (call before the store closes). A heartbeat under way ends
   * first: one that found no row would otherwise register the instance again after it left.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    this.stopped = true
    await this.beating?.catch(() => {})
    const id = this.id
    this.id = undefined
    if (id !== undefined) await this.o.store.repos.controllers.delete(id)
  }

  /** A page of the list, with the usual filter, sort and paging. */
  async list(params: ListParams): Promise<ListPage<ControllerView>> {
    const query = parseListQuery(params, CONTROLLER_LIST_SPEC)
    const page = await this.o.store.repos.controllers.list(query)
    const now = this.o.clock().getTime()
    return { ...page, items: page.items.map((r) => this.view(r, now)) }
  }

  /**
   * Every controller, in the client view, online ones first (name order within each): the
   * `ControllerDirectory` enrollment answers are wired to.
   */
  readonly summaries = async (): Promise<ControllerSummary[]> => {
    const all = await this.list({ sort: 'name asc', limit: '500' })
    return all.items
      .map(({ id, name, apiAddresses, certPem, fingerprint, isOnline }) => ({
        id,
        name,
        apiAddresses,
        certPem,
        fingerprint,
        isOnline,
      }))
      .sort((a, b) => Number(b.isOnline) - Number(a.isOnline))
  }

  private async register(): Promise<void> {
    const now = this.o.clock().toISOString()
    const { self } = this.o
    const stored = await this.o.store.repos.controllers.upsert({
      id: newId(),
      name: self.name,
      advertiseUrl: self.advertiseUrl,
      certPem: self.certPem,
      fingerprint: self.fingerprint,
      heartbeatMs: this.o.heartbeatMs,
      lastJoinedAt: now,
      lastHeartbeatAt: now,
      createdAt: now,
      updatedAt: now,
    })
    this.id = stored.id
  }

  private view(r: ControllerRecord, now: number): ControllerView {
    const age = now - Date.parse(r.lastHeartbeatAt)
    return {
      id: r.id,
      name: r.name,
      apiAddresses: apiAddresses(r.advertiseUrl),
      certPem: r.certPem,
      fingerprint: r.fingerprint,
      ctrlAddress: null,
      isOnline: age <= MISSED_HEARTBEATS * r.heartbeatMs,
      isPreferredLeader: false,
      lastJoinedAt: r.lastJoinedAt,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
      tags: {},
    }
  }
}
