import { accessSync, constants, realpathSync, statSync } from 'node:fs'
import { realpath, stat } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { FastifyPluginAsync, FastifyReply, RouteHandlerMethod } from 'fastify'
import fp from 'fastify-plugin'
import { ConfigError } from '../config.js'
import { caughtMessage } from '../errors.js'

export interface ConsoleOptions {
  /** The folder of the console's build (`CTRL_CONSOLE_DIR`), holding its `index.html`. */
  dir: string
}

/** Where the console is served, as OpenZiti's controller serves it (its `zac` binding). */
export const CONSOLE_PATH = '/zac'

/**
 * A bundler's content hash in a file name (`main.3f2a1b9c8d7e6f50.js`, `chunk-2ZYQJ3VQ.js`): eight
 * or more letters and digits, at least one a digit, just before the extension. Such a file never
 * changes under its name, so it is cached for a year; every other file is revalidated each time.
 */
const HASHED = /[.-](?=[A-Za-z]*\d)[A-Za-z0-9]{8,}\.[A-Za-z0-9]+$/

const YEAR_CACHE = 'public, max-age=31536000, immutable'

/** The console's own pages are never framed, sniffed or named in a Referer to another site. */
function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers({
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  })
}

/** The folder, resolved; one clear line when it cannot serve (the controller then does not start). */
function consoleRoot(dir: string): string {
  try {
    const root = realpathSync(dir)
    if (!statSync(root).isDirectory()) throw new Error('not a folder')
    accessSync(root, constants.R_OK | constants.X_OK)
    accessSync(join(root, 'index.html'), constants.R_OK)
    return root
  } catch (err) {
    throw new ConfigError(
      `CTRL_CONSOLE_DIR: ${dir}: ${caughtMessage(err)} (a folder with the console's index.html)`,
    )
  }
}

/** Whether a path inside the folder is one the console may be served from: no dot name anywhere. */
function servable(rel: string): boolean {
  return !rel.split('/').some((part) => part.startsWith('.')) && !rel.includes('\0')
}

/**
 * OpenZiti's admin console at `/zac/`: its files with their content types, ETag and
 * Last-Modified (by @fastify/static), and `index.html` for any path without a file (a single-page
 * application routes in the browser). Dot files, `..` and symlinks that lead out of the folder are
 * 404, as if absent from it; `/zac` redirects to `/zac/`.
 */
const pages: FastifyPluginAsync<ConsoleOptions> = async (app, o) => {
  const root = consoleRoot(o.dir)
  // Loaded only when a console is served: about 1.5 MB of the heap a controller without one
  // would keep for nothing.
  const { default: fastifyStatic } = await import('@fastify/static')
  await app.register(fastifyStatic, {
    root,
    serve: false, // the route below decides what is served; sendFile does the serving
    dotfiles: 'deny',
    index: false,
    cacheControl: false, // set per file below
    etag: true,
    lastModified: true,
  })

  /** The file under `root` that `rel` names, if it is a regular file inside the folder. */
  async function fileIn(rel: string): Promise<string | 'outside' | undefined> {
    let real: string
    try {
      real = await realpath(join(root, rel))
    } catch {
      return undefined
    }
    if (real !== root && !real.startsWith(root + sep)) return 'outside'
    const info = await stat(real).catch(() => undefined)
    return info?.isFile() ? real.slice(root.length + 1) : undefined
  }

  const handler: RouteHandlerMethod = async (request, reply) => {
    securityHeaders(reply)
    // The router reads `/zac` and `/zac/` as one route: only the bare name is redirected.
    if (request.url === CONSOLE_PATH || request.url.startsWith(`${CONSOLE_PATH}?`)) {
      return reply.redirect(`${CONSOLE_PATH}/${request.url.slice(CONSOLE_PATH.length)}`, 301)
    }
    const rel = (request.params as { '*'?: string })['*'] ?? '' // the wildcard, absent on `/zac/`
    if (!servable(rel)) return reply.callNotFound()
    const file = await fileIn(rel)
    // A symlink may lead to a dot file inside the folder: what is served must be servable too.
    if (file === 'outside' || (file !== undefined && !servable(file))) return reply.callNotFound()
    const served = file ?? 'index.html'
    reply.header('cache-control', HASHED.test(served) ? YEAR_CACHE : 'no-cache')
    return reply.sendFile(served)
  }
  // `/zac/` reaches the first (trailing slashes are ignored), `/zac/<anything>` the second.
  app.get(CONSOLE_PATH, { schema: { hide: true } }, handler)
  app.get(`${CONSOLE_PATH}/*`, { schema: { hide: true } }, handler)
}

/** The console plugin, encapsulated: `sendFile` and its route stay inside it. */
export const consolePages = fp(pages, { name: 'console', encapsulate: true })
