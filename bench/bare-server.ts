import { readFileSync } from 'node:fs'
import Fastify from 'fastify'

/**
 * The baseline: a bare Fastify route, started as its own process like the controller. With
 * `PAGE` (a file), `/page` answers that file's bytes as JSON: the same body as a controller's page,
 * at a bare route's cost (the ceiling of a page that size on this machine).
 */
const app = Fastify({ logger: false })
app.get('/hello', async () => ({ data: [], meta: {} }))
if (process.env.PAGE) {
  const page = readFileSync(process.env.PAGE)
  app.get('/page', (_request, reply) => {
    reply.header('content-type', 'application/json; charset=utf-8').send(page)
  })
}
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
