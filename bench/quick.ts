import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measure } from './common.js'
import { startController } from './controller.js'
import { distinctLogins, loginFixture } from './login.js'
import { freePort, startProcess } from './processes.js'
import { benchSecondary } from './secondary.js'

const cpu = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(f[11]) + Number(f[12])) * 10_000 // clock ticks (10 ms) to µs
}
const threads = (pid: number) => {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')
    const name = f[0]?.split(' (')[1] ?? tid
    const v = f[1]?.split(' ') ?? []
    const key = tid === String(pid) ? 'main' : name
    out.set(key, (out.get(key) ?? 0) + (Number(v[11]) + Number(v[12])) * 10_000)
  }
  return out
}
async function per(pid: number, run: () => Promise<{ rps: number; requests: number }>) {
  const before = cpu(pid)
  const t0 = threads(pid)
  const r = await run()
  const t1 = threads(pid)
  const split = [...t1]
    .map(([k, v]) => `${k} ${((v - (t0.get(k) ?? 0)) / r.requests).toFixed(1)}`)
    .join(', ')
  return `${r.rps.toFixed(0)}/s ${((cpu(pid) - before) / r.requests).toFixed(1)}µs (${split})`
}
const dir = mkdtempSync(join(tmpdir(), 'ctrl-quick-'))
const port = await freePort()
const url = `http://127.0.0.1:${port}`
const bare = await startProcess(join(import.meta.dirname, 'bare-server.js'), url, '/hello', {
  PORT: String(port),
})
const ctrl = await startController(join(dir, 'q.db'), { signers: 100 })
for (let i = 0; i < 20; i++)
  await ctrl.call('POST', '/edge/management/v1/identities', { name: `user-${i}` })
const admin = () => ({ 'zt-session': ctrl.token })
const which = (process.argv[2] ?? 'client,signers,identities').split(',')
for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++) {
  console.log('bare', await per(bare.pid, () => measure(`${url}/hello`)))
  if (which.includes('cclient'))
    console.log(
      'client',
      await per(ctrl.pid, () => measure(`${ctrl.base}/edge/client/v1/external-jwt-signers`)),
    )
  if (which.includes('csigners'))
    console.log(
      'signers',
      await per(ctrl.pid, () =>
        measure(`${ctrl.base}/edge/management/v1/external-jwt-signers`, { headers: admin }),
      ),
    )
  if (which.includes('cidentities'))
    console.log(
      'identities',
      await per(ctrl.pid, () =>
        measure(`${ctrl.base}/edge/management/v1/identities`, { headers: admin }),
      ),
    )
  if (which.includes('secondary')) await benchSecondary(ctrl.base, ctrl.call)
  if (which.includes('clogin')) {
    const f = await loginFixture(ctrl)
    const tokens = await f.tokens('RS256', 15000)
    const raw = await f.rawRate(tokens.slice(0, 5000))
    const self = process.cpuUsage()
    console.log(
      'login',
      await per(ctrl.pid, () => distinctLogins(ctrl, tokens)),
      `raw ${raw.toFixed(0)}`,
    )
    const used = process.cpuUsage(self)
    console.log(`  load generator ${((used.user + used.system) / 15000).toFixed(1)}µs per request`)
    f.close()
  }
  const b = (await measure(`${url}/hello`)).rps
  const out = [`bare ${b.toFixed(0)}`]
  if (which.includes('client'))
    out.push(
      `client ${((await measure(`${ctrl.base}/edge/client/v1/external-jwt-signers`)).rps / b).toFixed(2)}`,
    )
  if (which.includes('signers'))
    out.push(
      `signers ${((await measure(`${ctrl.base}/edge/management/v1/external-jwt-signers`, { headers: admin })).rps / b).toFixed(2)}`,
    )
  if (which.includes('identities'))
    out.push(
      `identities ${((await measure(`${ctrl.base}/edge/management/v1/identities`, { headers: admin })).rps / b).toFixed(2)}`,
    )
  if (which.includes('login')) {
    const f = await loginFixture(ctrl)
    const tokens = await f.tokens('RS256', 15000)
    const raw = await f.rawRate(tokens.slice(0, 5000))
    out.push(
      `login ${((await distinctLogins(ctrl, tokens)).rps / raw).toFixed(2)} (raw ${raw.toFixed(0)})`,
    )
    f.close()
  }
  console.log(out.join('  '))
}
await ctrl.stop()
await bare.stop()
