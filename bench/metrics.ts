import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { measure, type Result } from './common.js'
import { startController } from './controller.js'
import { freePort } from './processes.js'

const ISSUER = 'https://metrics.bench'

/** One controller as `npm start` runs it, with 100 listed signers, a JWKS signer and a user. */
async function controller(dir: string, name: string, jwksUrl: string, env = {}) {
  const ctrl = await startController(join(dir, `${name}.db`), {
    signers: 100,
    env: { CTRL_LOG_LEVEL: 'warn', ...env },
  })
  await ctrl.call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'bench-jwks',
    enabled: true,
    issuer: ISSUER,
    audience: 'ziti',
    jwksEndpoint: jwksUrl,
  })
  const identity = await ctrl.call('POST', '/edge/management/v1/identities', { name: 'bench-user' })
  const sub = ((await identity.json()) as { data: { id: string } }).data.id
  return { base: ctrl.base, sub, stop: ctrl.stop }
}

interface Figures {
  list: Result
  login: Result
}

/** Both figures of one controller: the client signer list, then RS256 login. */
async function figures(base: string, tokens: string[]): Promise<Figures> {
  const list = await measure(`${base}/edge/client/v1/external-jwt-signers`)
  let j = 0
  const login = await measure(`${base}/edge/client/v1/authenticate?method=ext-jwt`, {
    method: 'POST',
    headers: () => ({ authorization: `Bearer ${tokens[j++ % tokens.length]}` }),
  })
  return { list, login }
}

/**
 * The cost of metrics: the same figures from a controller with the metrics listener on (and
 * scraped every second, as Prometheus would, only more often) as ratios of one with it off.
 */
export async function benchMetrics(dir: string): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'metrics', alg: 'RS256' }] }
  const idp = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(jwks))
  })
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve))
  const jwksUrl = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/jwks` // TCP listener
  const metricsPort = await freePort()
  const off = await controller(dir, 'metrics-off', jwksUrl)
  const on = await controller(dir, 'metrics-on', jwksUrl, {
    CTRL_METRICS_PORT: String(metricsPort),
  })
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
  const scraper = setInterval(
    () =>
      void fetch(metricsUrl).then(
        (r) => r.text(),
        () => '',
      ),
    1000,
  )
  await new Promise((r) => setTimeout(r, 300))

  const tokensFor = (sub: string) =>
    Promise.all(
      Array.from({ length: 2000 }, (_, i) =>
        new SignJWT({ sub, jti: `m${i}` })
          .setProtectedHeader({ alg: 'RS256', kid: 'metrics' })
          .setIssuer(ISSUER)
          .setAudience('ziti')
          .setIssuedAt()
          .setExpirationTime('1h')
          .sign(privateKey),
      ),
    )
  const [offTokens, onTokens] = [await tokensFor(off.sub), await tokensFor(on.sub)]
  // Both controllers are loaded at once, so that whatever else the machine does weighs on both
  // alike; two rounds, each with tokens the other did not use.
  const rounds: { on: Figures; off: Figures }[] = []
  for (const [from, to] of [
    [0, 1000],
    [1000, 2000],
  ] as const) {
    const [offFigures, onFigures] = await Promise.all([
      figures(off.base, offTokens.slice(from, to)),
      figures(on.base, onTokens.slice(from, to)),
    ])
    rounds.push({ off: offFigures, on: onFigures })
  }
  clearInterval(scraper)
  const scraped = await fetch(metricsUrl).then((r) => r.text())

  const rate = (side: 'on' | 'off', key: keyof Figures) =>
    rounds.reduce((n, r) => n + r[side][key].rps, 0) / rounds.length
  const errors = (key: keyof Figures) =>
    rounds.reduce((n, r) => n + r.on[key].errors + r.off[key].errors, 0)
  for (const [name, key] of [
    ['client signer list (10 of 100 signers listed)', 'list'],
    ['ext-jwt login RS256', 'login'],
  ] as const) {
    const offRate = rate('off', key)
    const onRate = rate('on', key)
    console.log(
      `${`${name}, metrics on`.padEnd(46)} ${onRate.toFixed(0).padStart(7)} req/s  off ${offRate.toFixed(0)} req/s  errors ${errors(key)}  ratio ${(onRate / offRate).toFixed(2)} of metrics off`,
    )
  }
  const logins = /ctrl_logins_total\{method="ext-jwt",result="success",reason="none"\} (\d+)/.exec(
    scraped,
  )
  console.log(`${'(logins counted by the metered controller)'.padEnd(46)} ${logins?.[1] ?? 0}`)
  await on.stop()
  await off.stop()
  idp.close()
}
