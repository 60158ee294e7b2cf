import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import {
  DURATION_S,
  measure,
  type Paired,
  paired,
  type Result,
  report,
  SLICES,
  WARMUP_S,
} from './common.js'
import type { Controller } from './controller.js'
import { askingProcess } from './processes.js'

type Alg = 'RS256' | 'ES256'

export interface LoginFixture {
  /** Distinct tokens of the fixture's LOGIN_USERS identities in turn, or of `subs`. */
  tokens(alg: Alg, count: number, subs?: string[]): Promise<string[]>
  /** One identity of its own, for runs of one identity's logins (past its session cap). */
  one: string
  /** Creates `count` more identities (token subjects); resolves with their ids. */
  identities(count: number): Promise<string[]>
  rawRate(tokens: string[]): Promise<number>
  close(): void
}

/**
 * How many identities the login runs' tokens name in turn. Logins in production come from many
 * users, each with a few sessions; a run of one identity's logins keeps it past its session cap,
 * so that every login also ends its oldest session (the capacity inputs measure that case apart).
 * Enough that each stays below the default cap (100) through the login goals' runs.
 */
export const LOGIN_USERS = Number(process.env.BENCH_LOGIN_USERS ?? 5000)

/**
 * A JWKS server on loopback with an RS256 and an ES256 key, a signer for it, LOGIN_USERS
 * identities and one more of its own.
 */
export async function loginFixture(ctrl: Controller): Promise<LoginFixture> {
  const pairs = await Promise.all(
    (['RS256', 'ES256'] as const).map(async (alg) => {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
      return { alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid: `bench-${alg}`, alg } }
    }),
  )
  const jwks = { keys: pairs.map((p) => p.jwk) }
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(jwks))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks` // TCP listener
  await ctrl.call('POST', '/edge/management/v1/external-jwt-signers', {
    name: 'bench-jwks',
    enabled: true,
    issuer: 'https://bench.idp',
    audience: 'ziti',
    jwksEndpoint: jwksUrl,
  })
  const identity = await ctrl.call('POST', '/edge/management/v1/identities', { name: 'bench-user' })
  const sub = ((await identity.json()) as { data: { id: string } }).data.id
  await new Promise((r) => setTimeout(r, 300))
  /** The sequential jose loop, in a process of its own (jose-loop.ts), once first asked. */
  let baseline: ReturnType<typeof askingProcess> | undefined
  let serial = 0
  let identities = 0
  /** Creates `count` identities, 16 requests at a time; resolves with their ids in order. */
  const create = async (count: number): Promise<string[]> => {
    const ids: string[] = new Array(count)
    let next = 0
    const worker = async () => {
      for (let i = next++; i < count; i = next++) {
        const res = await ctrl.call('POST', '/edge/management/v1/identities', {
          name: `bench-user-${identities++}`,
        })
        ids[i] = ((await res.json()) as { data: { id: string } }).data.id
      }
    }
    await Promise.all(Array.from({ length: 16 }, worker))
    return ids
  }
  const users = await create(LOGIN_USERS)
  return {
    one: sub,
    tokens: (alg, count, subs = users) => {
      const pair = pairs.find((p) => p.alg === alg) as (typeof pairs)[number] // both algs exist
      return Promise.all(
        Array.from({ length: count }, (_, i) =>
          new SignJWT({ sub: subs[i % subs.length] ?? sub, jti: `t${serial++}` })
            .setProtectedHeader({ alg, kid: pair.jwk.kid })
            .setIssuer('https://bench.idp')
            .setAudience('ziti')
            .setIssuedAt()
            .setExpirationTime('1h')
            .sign(pair.privateKey),
        ),
      )
    },
    identities: create,
    rawRate: async (tokens) => {
      baseline ??= askingProcess(join(import.meta.dirname, 'jose-loop.js'), [JSON.stringify(jwks)])
      const answer = (await baseline.ask(tokens)) as { rate: number } | { error: string }
      if ('error' in answer) throw new Error(`the jose.jwtVerify baseline: ${answer.error}`)
      return answer.rate
    },
    close: () => {
      baseline?.stop()
      server.close()
    },
  }
}

/** How many distinct tokens one login run gets: enough for the run, each sent exactly once. */
export const LOGIN_TOKENS = Number(process.env.BENCH_LOGIN_TOKENS ?? 5000 * DURATION_S)

/**
 * Logins with distinct tokens (no cache can help), each sent once; resolves with req/s.
 * `beforeRun` is called right before the first login is sent.
 */
export async function distinctLogins(
  ctrl: Controller,
  tokens: string[],
  beforeRun?: () => Promise<void>,
  /** Logins a second at most (a load below saturation); default: as fast as answered. */
  rate?: number,
): Promise<Result> {
  let j = 0
  return measure(`${ctrl.base}/edge/client/v1/authenticate?method=ext-jwt`, {
    pid: ctrl.pid,
    method: 'POST',
    amount: tokens.length,
    headers: () => ({ authorization: `Bearer ${tokens[j++]}` }),
    ...(beforeRun ? { beforeRun } : {}),
    ...(rate === undefined ? {} : { rate }),
  })
}

/**
 * Logins with tokens of their own for WARMUP_S seconds, never measured: V8 optimises the login
 * path as it does a route's, and a run of distinct tokens cannot warm itself up.
 */
export async function warmLogins(
  ctrl: Controller,
  fixture: LoginFixture,
  alg: Alg,
  subs?: string[],
): Promise<void> {
  await distinctLogins(ctrl, await fixture.tokens(alg, Math.ceil(3000 * WARMUP_S), subs))
}

/** The rate of a sequential loop, as a Result (a baseline of `paired`). */
function asResult(rps: number, requests: number): Result {
  return { rps, p99: 0, errors: 0, requests }
}

/**
 * Login throughput with distinct tokens against a sequential jose.jwtVerify loop over the very same
 * tokens, in rounds (fresh tokens each); the RS256 ratio is goal 2.
 */
export async function benchLogin(ctrl: Controller, fixture: LoginFixture): Promise<Paired> {
  let rs256: Paired | undefined
  for (const alg of ['RS256', 'ES256'] as const) {
    await warmLogins(ctrl, fixture, alg)
    let tokens: string[] = []
    const ratio = await paired(
      `ext-jwt login ${alg}, ${LOGIN_TOKENS} distinct tokens, ${LOGIN_USERS} identities`,
      `sequential jose.jwtVerify ${alg}`,
      async () => asResult(await fixture.rawRate(tokens), tokens.length),
      () => distinctLogins(ctrl, tokens),
      SLICES,
      async (round, slice) => {
        // jose's path warms up too, on tokens of its own.
        if (round === 0 && slice === 0) await fixture.rawRate(await fixture.tokens(alg, 3000))
        tokens = await fixture.tokens(alg, Math.ceil(LOGIN_TOKENS / SLICES))
      },
    )
    if (alg === 'RS256') rs256 = ratio
  }
  const repeated = await fixture.tokens('RS256', 100)
  let k = 0
  report(
    'ext-jwt login RS256, 100 tokens repeated',
    await measure(`${ctrl.base}/edge/client/v1/authenticate?method=ext-jwt`, {
      method: 'POST',
      pid: ctrl.pid,
      headers: () => ({ authorization: `Bearer ${repeated[k++ % repeated.length]}` }),
    }),
    await fixture.rawRate(repeated.concat(repeated, repeated)),
    'raw verify',
  )
  return rs256 as Paired // the loop's first algorithm
}
