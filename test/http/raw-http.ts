import { request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

/** Starts the app on a free loopback port and returns the port. */
export async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

export interface RawResponse {
  status: number
  headers: string
  body: string
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number
}

/** Connects, lets `talk` write to the socket, and collects everything until the server closes. */
export function rawExchange(
  port: number,
  talk: (socket: Socket) => void,
  limitMs = 15_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const started = Date.now()
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`the server kept the connection open for ${limitMs} ms`))
    }, limitMs)
    socket.on('data', (d) => chunks.push(d))
    // A reset after the answer arrived still counts as closed.
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('utf8')
      const split = text.indexOf('\r\n\r\n')
      const head = split < 0 ? text : text.slice(0, split)
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
        headers: head,
        body: split < 0 ? '' : text.slice(split + 4),
        closedAfterMs: Date.now() - started,
      })
    })
    socket.on('connect', () => talk(socket))
  })
}

/** Sends raw bytes and collects the answer until the server closes. */
export function rawRequest(port: number, data: string): Promise<RawResponse> {
  return rawExchange(port, (socket) => socket.write(data))
}

/** An answer as a test compares it: status, headers without `date` (it moves by the second), body. */
export interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** One request over a real connection (inject never reaches what answers before Fastify). */
export function httpAnswer(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const { date: _date, ...rest } = res.headers as Record<string, string>
        resolve({
          status: res.statusCode ?? 0,
          headers: rest,
          body: Buffer.concat(chunks).toString(),
        })
      })
    })
    req.on('error', reject)
    req.end()
  })
}
