import { exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it } from 'vitest'
import { caller, forEachStore, login, testClock } from '../helpers/app.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { buildMeteredApp } from './scrape.js'

const M = '/edge/management/v1'
const NOW = '2026-11-22T08:00:00.000Z'
const ISSUER = 'https://jwks.metrics.example'

/** Waits until the server has answered `hits` requests and the app has taken the answer in. */
async function settle(hits: () => number, n: number) {
  for (let i = 0; i < 200 && hits() < n; i++) await new Promise((r) => setTimeout(r, 10))
  await new Promise((r) => setTimeout(r, 30))
}

forEachStore(() => {
  describe('the metrics listener', () => {
    it('serves the Prometheus text format with the Node.js and process metrics; the API port serves none', async () => {
      const s = await buildMeteredApp()
      const scraped = await s.scrape()
      expect(scraped.contentType).toMatch(/^text\/plain; version=0\.0\.4/)
      for (const name of ['process_cpu_user_seconds_total', 'nodejs_heap_size_used_bytes']) {
        expect(scraped.matching(name)).toHaveLength(1)
      }
      expect((await fetch(s.url.replace('/metrics', '/other'))).status).toBe(404)
      expect((await fetch(s.url, { method: 'POST' })).status).toBe(405)
      const api = await s.app.inject({ method: 'GET', url: '/metrics' })
      expect(api.statusCode).toBe(404)
      expect(api.json().error.code).toBe('NOT_FOUND')
    })

    it('counts requests by method, route pattern and status; unknown URLs as unmatched', async () => {
      const s = await buildMeteredApp()
      const call = caller(s.app, await login(s.app))
      expect((await call('GET', `${M}/external-jwt-signers/no-such-signer`)).statusCode).toBe(404)
      expect((await call('GET', `${M}/ext-jwt-signers/another-one`)).statusCode).toBe(404)
      expect((await call('GET', `${M}/external-jwt-signers`)).statusCode).toBe(200)
      expect((await s.app.inject({ method: 'GET', url: '/no/such/path?x=1' })).statusCode).toBe(404)
      const scraped = await s.scrape()
      const requests = (route: string, status: string) =>
        scraped.value('ctrl_http_requests_total', { method: 'GET', route, status })
      expect(requests(`${M}/external-jwt-signers/:id`, '404')).toBe(1)
      expect(requests(`${M}/ext-jwt-signers/:id`, '404')).toBe(1)
      expect(requests(`${M}/external-jwt-signers`, '200')).toBe(1)
      expect(requests('unmatched', '404')).toBe(1)
      expect(
        scraped.value('ctrl_http_requests_total', {
          method: 'POST',
          route: `${M}/authenticate`,
          status: '200',
        }),
      ).toBe(1)
      const duration = (route: string) =>
        scraped.value('ctrl_http_request_duration_seconds_count', { method: 'GET', route })
      expect(duration(`${M}/external-jwt-signers/:id`)).toBe(1)
      expect(duration('unmatched')).toBe(1)
      expect(
        scraped.value('ctrl_http_request_duration_seconds_bucket', {
          method: 'GET',
          route: 'unmatched',
          le: '+Inf',
        }),
      ).toBe(1)
      const values = scraped.samples.flatMap((x) => Object.values(x.labels))
      for (const raw of ['no-such-signer', 'another-one', '/no/such/path'])
        expect(values.some((v) => v.includes(raw))).toBe(false)
    })

    it('follows sessions and signers, enabled or not', async () => {
      const s = await buildMeteredApp()
      const gauge = async (name: string, labels: Record<string, string> = {}) =>
        (await s.scrape()).value(name, labels)
      expect(await gauge('ctrl_api_sessions')).toBe(0)
      const token = await login(s.app)
      const call = caller(s.app, token)
      await login(s.app)
      expect(await gauge('ctrl_api_sessions')).toBe(2)
      const signer = await call('POST', `${M}/external-jwt-signers`, {
        name: 'off',
        enabled: false,
        issuer: 'https://off.example',
        audience: 'ziti',
        jwksEndpoint: 'http://127.0.0.1:1/jwks',
      })
      expect(await gauge('ctrl_signers', { enabled: 'false' })).toBe(1)
      expect(await gauge('ctrl_signers', { enabled: 'true' })).toBe(0)
      await call('PATCH', `${M}/external-jwt-signers/${signer.json().data.id}`, { enabled: true })
      expect(await gauge('ctrl_signers', { enabled: 'false' })).toBe(0)
      expect(await gauge('ctrl_signers', { enabled: 'true' })).toBe(1)
      expect((await call('DELETE', '/edge/client/v1/current-api-session')).statusCode).toBe(200)
      expect(await gauge('ctrl_api_sessions')).toBe(1)
    })

    it('counts JWKS fetches and shows each signer key count and last success, until it is deleted', async () => {
      const { publicKey } = await generateKeyPair('RS256', { extractable: true })
      const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' }
      const server = await startJwksServer([jwk])
      const clock = testClock(NOW)
      const s = await buildMeteredApp({ clock })
      const call = caller(s.app, await login(s.app))
      const signerId = (
        await call('POST', `${M}/external-jwt-signers`, {
          name: 'jwks',
          enabled: true,
          issuer: ISSUER,
          audience: 'ziti',
          jwksEndpoint: server.url,
        })
      ).json().data.id as string
      await settle(server.hits, 1)
      const labels = { signer_id: signerId }
      let scraped = await s.scrape()
      expect(scraped.value('ctrl_jwks_fetches_total', { ...labels, result: 'ok' })).toBe(1)
      expect(scraped.value('ctrl_jwks_fetches_total', { ...labels, result: 'error' })).toBe(0)
      expect(scraped.value('ctrl_jwks_keys', labels)).toBe(1)
      expect(scraped.value('ctrl_jwks_last_success_timestamp_seconds', labels)).toBe(
        Date.parse(NOW) / 1000,
      )

      // The provider fails: the error is counted, the keys and the last success stay.
      server.respond({ status: 500, body: 'down' })
      clock.advance(60_000)
      const refreshed = await call('POST', `${M}/external-jwt-signers/${signerId}/refresh-keys`)
      expect(refreshed.json().data.lastFetchError).not.toBeNull()
      scraped = await s.scrape()
      expect(scraped.value('ctrl_jwks_fetches_total', { ...labels, result: 'error' })).toBe(1)
      expect(scraped.value('ctrl_jwks_keys', labels)).toBe(1)
      expect(scraped.value('ctrl_jwks_last_success_timestamp_seconds', labels)).toBe(
        Date.parse(NOW) / 1000,
      )

      // Back, with a second key.
      server.setKeys([jwk, { ...jwk, kid: 'k2' }])
      clock.advance(60_000)
      await call('POST', `${M}/external-jwt-signers/${signerId}/refresh-keys`)
      scraped = await s.scrape()
      expect(scraped.value('ctrl_jwks_fetches_total', { ...labels, result: 'ok' })).toBe(2)
      expect(scraped.value('ctrl_jwks_keys', labels)).toBe(2)
      expect(scraped.value('ctrl_jwks_last_success_timestamp_seconds', labels)).toBe(
        Date.parse(NOW) / 1000 + 120,
      )

      expect((await call('DELETE', `${M}/external-jwt-signers/${signerId}`)).statusCode).toBe(200)
      scraped = await s.scrape()
      const left = scraped.samples.filter((x) => x.labels.signer_id === signerId)
      expect(left).toEqual([])
    })
  })
})
