import Fastify from 'fastify'

/** The baseline: a bare Fastify route, started as its own process like the controller. */
const app = Fastify({ logger: false })
app.get('/hello', async () => ({ data: [], meta: {} }))
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
