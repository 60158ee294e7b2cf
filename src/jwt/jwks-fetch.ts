import type { LookupAddress, LookupOptions } from 'node:dns'
import { lookup as dnsLookup } from 'node:dns'
import type { JSONWebKeySet } from 'jose'
import { Agent, fetch } from 'undici'
import { addressRefusal, type FetchPolicy, urlRefusal } from './ssrf-policy.js'

/** Resolves a host name to every address it has (injectable, so tests never leave loopback). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>

export interface JwksFetchOptions {
  policy: FetchPolicy
  timeoutMs: number
  resolver?: Resolver
}

export const MAX_JWKS_BYTES = 1024 * 1024
const MAX_REDIRECTS = 3
const JSON_TYPE = /^application\/(?:json|[\w.+-]+\+json)\s*(?:;.*)?$/i

/** A guarded fetch refused by policy or by the rules on the answer (JWKS and discovery alike). */
export class JwksFetchError extends Error {
  override name = 'JwksFetchError'
}

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)))
  })

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void

/**
 * An undici dispatcher whose name resolution refuses blocked addresses. The check runs on the
 * addresses actually dialled, so a name that later resolves elsewhere (DNS rebinding) gains nothing.
 */
function guardedAgent(policy: FetchPolicy, resolver: Resolver): Agent {
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    resolver(hostname).then(
      (addresses) => {
        const refused = addresses.map((a) => addressRefusal(a.address, policy)).find(Boolean)
        const first = addresses[0]
        if (refused || first === undefined) {
          callback(new JwksFetchError(refused ?? `${hostname} has no address`), '')
          return
        }
        if (options.all) callback(null, addresses)
        else callback(null, first.address, first.family)
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    )
  }
  return new Agent({ connect: { lookup: lookup as never } }) // undici types lookup as net's LookupFunction
}

async function readCapped(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.byteLength
    if (size > MAX_JWKS_BYTES)
      throw new JwksFetchError(`response larger than ${MAX_JWKS_BYTES} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Fetches JSON documents under the SSRF policy, with a timeout, a size cap and redirect checks. */
export class GuardedJsonFetcher {
  private readonly agent: Agent

  constructor(private readonly options: JwksFetchOptions) {
    this.agent = guardedAgent(options.policy, options.resolver ?? systemResolver)
  }

  /**
   * Returns the parsed JSON body of a 200 answer with a JSON content type, or throws JwksFetchError
   * (or a network error) saying why not. Each redirect target is checked like the first URL.
   */
  async fetchJson(url: string, accept: string, signal?: AbortSignal): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs)
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout
    let target = url
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const refused = urlRefusal(target, this.options.policy)
      if (refused) throw new JwksFetchError(refused)
      const res = await fetch(target, {
        dispatcher: this.agent,
        redirect: 'manual',
        signal: combined,
        headers: { accept },
      })
      const location = res.headers.get('location')
      if (res.status >= 300 && res.status < 400 && location) {
        await res.body?.cancel()
        target = new URL(location, target).toString()
        continue
      }
      if (res.status !== 200) {
        await res.body?.cancel()
        throw new JwksFetchError(`status ${res.status}`)
      }
      const type = res.headers.get('content-type') ?? ''
      if (!JSON_TYPE.test(type)) {
        await res.body?.cancel()
        throw new JwksFetchError(`content type "${type}" is not JSON`)
      }
      const text = res.body ? await readCapped(res.body) : ''
      try {
        return JSON.parse(text)
      } catch {
        throw new JwksFetchError('body is not JSON')
      }
    }
    throw new JwksFetchError(`more than ${MAX_REDIRECTS} redirects`)
  }

  async close(): Promise<void> {
    await this.agent.close()
  }
}

/** True for a JSON object (not null, not an array), whose members may then be read by name. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** Fetches JWK sets with the rules of GuardedJsonFetcher. */
export class JwksFetcher extends GuardedJsonFetcher {
  /** Returns the key set, or throws JwksFetchError (or a network error) saying why not. */
  async fetch(url: string, signal?: AbortSignal): Promise<JSONWebKeySet> {
    const doc = await this.fetchJson(url, 'application/jwk-set+json, application/json', signal)
    const keys = isJsonObject(doc) ? doc.keys : undefined
    if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'object' || k === null)) {
      throw new JwksFetchError('body is not a JWK set')
    }
    return doc as JSONWebKeySet // checked: an object whose keys is an array of objects
  }
}

/** What went wrong in a guarded fetch, in a few words (network errors carry it in their cause). */
export function fetchFailure(err: unknown): string {
  if (err instanceof JwksFetchError) return err.message
  if (err instanceof Error && err.name === 'TimeoutError') return 'timed out'
  const cause = err instanceof Error ? err.cause : undefined
  if (cause instanceof Error) return cause.message
  return err instanceof Error ? err.message : 'unknown error'
}
