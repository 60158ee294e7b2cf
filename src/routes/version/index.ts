import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import pkg from '../../../package.json' with { type: 'json' }
import { type Version, VersionEnvelopeSchema } from './schemas.js'

export interface VersionRoutesOptions {
  /** The path prefixes of the client and management APIs. */
  clientPath: string
  managementPath: string
}

/**
 * `scheme://host[:port]` the request came in on: the Host header as the client wrote it, or the
 * socket's own address when the header is missing or is not a host.
 */
function origin(request: FastifyRequest): string {
  const scheme = request.protocol
  try {
    const url = new URL(`${scheme}://${request.host}`)
    if (request.host !== '' && url.pathname === '/' && url.username === '') return url.origin
  } catch {
    // not a host: fall back to the address the connection reached
  }
  const { localAddress = '127.0.0.1', localPort } = request.socket
  const host = localAddress.includes(':') ? `[${localAddress}]` : localAddress
  return `${scheme}://${host}${localPort ? `:${localPort}` : ''}`
}

/**
 * Version discovery, without authentication, where OpenZiti's CLI, console and SDKs look for it
 * (`/version`, each API's `/version` and each API's root). Capabilities list only what this
 * controller serves: no OIDC_AUTH, which would send SDKs to an `/oidc` flow that does not exist here.
 */
const versionRoutes: FastifyPluginAsyncTypebox<VersionRoutesOptions> = async (app, options) => {
  const { clientPath, managementPath } = options
  const version = (request: FastifyRequest): Version => {
    const base = origin(request)
    const api = (path: string) => ({ v1: { path, apiBaseUrls: [`${base}${path}`] } })
    return {
      version: `v${pkg.version}`,
      revision: 'unknown',
      buildDate: 'unknown',
      runtimeVersion: process.version,
      capabilities: [],
      apiVersions: {
        edge: api(clientPath),
        'edge-client': api(clientPath),
        'edge-management': api(managementPath),
      },
    }
  }
  // Each API's root answers the same (`listRoot` in the edge API's specifications).
  for (const url of [
    '/version',
    `${clientPath}/version`,
    `${managementPath}/version`,
    `${clientPath}/`,
    `${managementPath}/`,
  ]) {
    app.get(
      url,
      { schema: { tags: ['Informational'], response: { 200: VersionEnvelopeSchema } } },
      async (request) => ({ data: version(request), meta: {} }),
    )
  }
}

export default versionRoutes
