import { once } from 'node:events'
import { describe, expect, it, onTestFinished } from 'vitest'
import { type Started, startServer, stopServer } from '../helpers/server-process.js'
import { createTestDatabase, PG_URL } from '../helpers/stores.js'

const PASSWORD = 'controllers-admin-password'
const M = '/edge/management/v1'

async function names(s: Started): Promise<Record<string, boolean>> {
  const login = await fetch(`${s.base}${M}/authenticate?method=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  const token = login.headers.get('zt-session') as string
  const res = await fetch(`${s.base}/edge/client/v1/controllers?sort=name`, {
    headers: { 'zt-session': token },
  })
  expect(res.status).toBe(200)
  const body = (await res.json()) as { data: { name: string; isOnline: boolean }[] }
  return Object.fromEntries(body.data.map((c) => [c.name, c.isOnline]))
}

describe.skipIf(!PG_URL)('the controllers list of built servers on one PostgreSQL database', () => {
  it('shows both instances to each, and loses the one that SIGTERM stopped cleanly', async () => {
    const db = await createTestDatabase()
    const env = { CTRL_DB: db, CTRL_ADMIN_PASSWORD: PASSWORD, CTRL_DB_POOL: '2' }
    const a = await startServer({ ...env, CTRL_INSTANCE_NAME: 'ctrl-a' })
    onTestFinished(() => stopServer(a).then(() => {}))
    // Unnamed: host name and the port it listens on (CTRL_PORT=0 picks one at start).
    const b = await startServer(env)
    onTestFinished(() => stopServer(b).then(() => {}))
    const bName = Object.keys(await names(b)).find((n) => n !== 'ctrl-a') as string
    expect(bName).toMatch(new RegExp(`:${new URL(b.base).port}$`))

    expect(await names(a)).toEqual({ 'ctrl-a': true, [bName]: true })
    expect(await names(b)).toEqual({ 'ctrl-a': true, [bName]: true })

    a.child.kill('SIGTERM')
    const [code] = await once(a.child, 'exit')
    expect(code).toBe(0)
    expect(await names(b)).toEqual({ [bName]: true })
  })
})
