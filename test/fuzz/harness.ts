import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { onTestFinished } from 'vitest'
import { buildTestApp, login } from '../helpers/app.js'
import type { StoreKind } from '../helpers/stores.js'
import { loopbackOnlyJson } from './hostile.js'
import { baseBody, type Ids, type Operation, operations } from './operations.js'

export interface FuzzRequest {
  method: string
  url: string
  headers: Record<string, string>
  /** A JSON value sent as the body (serialized by `loopbackOnlyJson`). */
  body?: unknown
  /** Body text sent as is (for JSON that `JSON.stringify` cannot produce). */
  raw?: string
}

const LISTS = [
  '/edge/management/v1/external-jwt-signers?limit=500',
  '/edge/management/v1/identities?limit=500',
  '/edge/management/v1/auth-policies?limit=500',
  '/edge/client/v1/external-jwt-signers?limit=500',
]

/** The start and end of a long text (a deep value shows where it ends). */
function clip(text: string): string {
  return text.length <= 400 ? text : `${text.slice(0, 200)}…${text.slice(-200)}`
}

/** The code of an error body, or what stands in for it when there is none. */
function codeOf(body: string): string {
  try {
    const code: unknown = JSON.parse(body).error?.code
    return typeof code === 'string' ? code : 'outside the envelope'
  } catch {
    return 'outside the envelope'
  }
}

function inEnvelope(body: string): boolean {
  try {
    const { error: e, meta } = JSON.parse(body)
    return (
      typeof e?.code === 'string' &&
      typeof e.message === 'string' &&
      typeof e.requestId === 'string' &&
      typeof meta?.apiVersion === 'string' &&
      typeof meta?.apiEnrollmentVersion === 'string'
    )
  } catch {
    return false
  }
}

/** The real app on a fresh database with one signer, policy and identity, ready to fuzz. */
export async function startHarness(
  storeKind?: StoreKind,
): Promise<{ h: Harness; ops: Operation[] }> {
  // Snapshots of the in-memory database go to a folder of this run, so that the route succeeds too.
  const snapshotDir = mkdtempSync(join(tmpdir(), 'ctrl-fuzz-'))
  onTestFinished(() => rmSync(snapshotDir, { recursive: true, force: true }))
  const config = { snapshotDir, snapshotKeep: 2 }
  const app = await buildTestApp(storeKind ? { storeKind, config } : { config })
  const h = new Harness(app)
  await h.setup()
  return { h, ops: operations(app) }
}

export class Harness {
  /** Session of the generated requests; the observer's, which reads the lists, is never sent. */
  token = ''
  private observer = ''
  ids: Ids = { signer: '', issuer: '', identity: '', policy: '' }
  /** Problems found, once per route and kind, with the first request that showed each. */
  readonly problems = new Map<string, string>()
  /** How many answers had each status, to see that requests get past validation too. */
  readonly statuses = new Map<number, number>()
  /** The lists as last read, unless a request succeeded since (and may have changed them). */
  private lastSnapshot: string | undefined

  constructor(readonly app: FastifyInstance) {}

  async setup(): Promise<void> {
    this.observer = await login(this.app)
    this.token = await login(this.app)
    const ops = operations(this.app)
    const create = async (path: string) => {
      const op = ops.find((o) => o.method === 'POST' && o.path === path)
      const body = op && baseBody(op, this.ids)
      const res = await this.app.inject({
        method: 'POST',
        url: path,
        headers: { 'zt-session': this.observer },
        payload: body as object, // a JSON object from baseBody
      })
      if (res.statusCode !== 201) throw new Error(`fixture ${path}: ${res.statusCode} ${res.body}`)
      return { id: String(res.json().data.id), body }
    }
    const m = '/edge/management/v1'
    const signer = await create(`${m}/external-jwt-signers`)
    this.ids.signer = signer.id
    this.ids.issuer = String((signer.body as { issuer?: string }).issuer) // a signer body
    this.ids.policy = (await create(`${m}/auth-policies`)).id
    this.ids.identity = (await create(`${m}/identities`)).id
  }

  /** A valid body for the operation (see `baseBody`). */
  base(op: Operation): unknown {
    return baseBody(op, this.ids)
  }

  /** The fixture record an operation's `{id}` names. */
  idFor(op: Operation): string {
    if (op.path.includes('jwt-signers')) return this.ids.signer
    return op.path.includes('auth-policies') ? this.ids.policy : this.ids.identity
  }

  /** Headers of an admin request with a JSON body. */
  admin(): Record<string, string> {
    return { 'zt-session': this.token, 'content-type': 'application/json' }
  }

  /** Everything the lists show, as one string: a failed request must leave it unchanged. */
  async snapshot(): Promise<string> {
    const headers = { 'zt-session': this.observer }
    const bodies = await Promise.all(
      LISTS.map(async (url) => (await this.app.inject({ method: 'GET', url, headers })).body),
    )
    return bodies.join('\n')
  }

  /**
   * Sends one request and records what is wrong with its answer: a 5xx, a 4xx outside the
   * envelope, or a failed request that changed what is stored.
   */
  async send(route: string, request: FuzzRequest): Promise<number> {
    const { body, raw } = request
    const payload = raw ?? (body === undefined ? undefined : loopbackOnlyJson(body))
    const before = this.lastSnapshot ?? (await this.snapshot())
    this.lastSnapshot = undefined
    const res = await this.app.inject({
      method: request.method as 'GET', // inject types methods as a union; ours come from the spec
      url: request.url,
      headers: request.headers,
      ...(payload === undefined ? {} : { payload }),
    })
    const status = res.statusCode
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    const record = (problem: string) => {
      const key = `${request.method} ${route}: ${problem}`
      if (this.problems.has(key)) return
      const headers = JSON.stringify(request.headers).slice(0, 200)
      this.problems.set(
        key,
        `${request.method} ${request.url.slice(0, 200)} headers=${headers} ` +
          `body=${clip(payload ?? '')} -> ${status} ${res.body.slice(0, 200)}`,
      )
    }
    if (status >= 500) {
      record(`answered ${status} ${codeOf(res.body)}`)
    } else if (status >= 400) {
      if (!inEnvelope(res.body)) record(`answered ${status} outside the envelope`)
      const after = await this.snapshot()
      if (after !== before) record(`failed with ${status} but changed the store`)
      this.lastSnapshot = after
    } else if (request.method === 'DELETE' && route.endsWith('current-api-session')) {
      this.token = await login(this.app).catch(() => this.token)
    }
    return status
  }

  /** The problems found, one entry each, for the assertion message. */
  report(): string[] {
    return [...this.problems].map(([kind, example]) => `${kind}\n    e.g. ${example}`)
  }
}
