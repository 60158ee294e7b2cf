import 'reflect-metadata'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { X509Certificates } from '@peculiar/x509'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type CallOptions,
  call,
  makeCaChain,
  type RunningServer,
  startServer,
} from '../helpers/built-server.js'
import { makeCert } from '../helpers/certs.js'
import { type RunningProvider, startOidcProvider } from '../helpers/oidc-provider.js'
import { createTestDatabase, STORES } from '../helpers/stores.js'
import { type CreateFlags, createBody, patchBody, SDK_INFO } from '../helpers/ziti-cli.js'

/*
 * OpenZiti's CLI against the built server over HTTPS, request by request, in the order its source
 * sends them (openziti/ziti ziti/cmd/edge: login.go, create_extjwtsigner.go, update_extjwtsigner.go,
 * list.go, common.go; ziti/util certs.go and rest.go), asserting what the CLI reads of each answer.
 */

interface Envelope<T> {
  data: T
  meta: { pagination?: { limit: number; offset: number; totalCount: number } }
}
interface Signer {
  id: string
  name: string
  issuer: string
  audience: string
  enabled: boolean
  claimsProperty: string
  useExternalId: boolean
  jwksEndpoint: string | null
  certPem: string | null
  kid: string | null
  fingerprint: string | null
  externalAuthUrl: string | null
  clientId: string | null
  scopes: string[] | null
  tags: Record<string, unknown>
}
interface Version {
  capabilities: string[]
  apiVersions: Record<string, { v1: { path: string; apiBaseUrls: string[] } }>
}
interface Session {
  token: string
  authenticatorId: string
  identity: { name: string }
}
interface ErrorBody {
  error: { code: string; cause?: { reason: string } }
}

const ADMIN_PASSWORD = 'walk-through-admin-password'
const dir = mkdtempSync(join(tmpdir(), 'ziti-cli-'))
let provider: RunningProvider

beforeAll(async () => {
  provider = await startOidcProvider(['ziti-tunneler'])
}, 120_000)
afterAll(async () => {
  await provider?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe.each(STORES)('OpenZiti CLI walk-through on %s', (kind) => {
  let server: RunningServer
  let base: string
  let trust: string
  let mgmt: string
  let session: string
  const ids = new Map<string, string>()

  const admin = <T>(path: string, options: CallOptions = {}) =>
    call<T>(`${mgmt}${path}`, {
      ...options,
      ca: trust,
      headers: { 'zt-session': session, ...options.headers },
    })
  const list = (filter: string) =>
    admin<Envelope<Signer[]>>(`/external-jwt-signers?${new URLSearchParams({ filter })}`)
  const detail = async (id: string) =>
    (await admin<Envelope<Signer>>(`/external-jwt-signers/${id}`)).json.data

  beforeAll(async () => {
    const tls = await makeCaChain()
    const files = {
      cert: join(dir, `${kind}.crt`),
      key: join(dir, `${kind}.key`),
      ca: join(dir, `${kind}-ca.pem`),
    }
    writeFileSync(files.cert, tls.certPem)
    writeFileSync(files.key, tls.keyPem)
    writeFileSync(files.ca, tls.caPem)
    server = await startServer({
      CTRL_DB: kind === 'postgres' ? await createTestDatabase() : ':memory:',
      CTRL_ADMIN_PASSWORD: ADMIN_PASSWORD,
      CTRL_TLS_CERT: files.cert,
      CTRL_TLS_KEY: files.key,
      CTRL_TLS_CA: files.ca,
    })
    base = server.base
  }, 30_000)
  afterAll(async () => {
    expect(await server?.stop()).toBe(0)
  })

  it('login host:port trusts, on first use, the CA offered at /.well-known/est/cacerts', async () => {
    const url = `${base}/.well-known/est/cacerts`
    // IsServerTrusted: the system roots do not know this controller.
    await expect(call(url)).rejects.toMatchObject({ code: expect.stringMatching(/CERT|SIGNATURE/) })
    // GetWellKnownCerts: fetched without verification, base64 DER of a PKCS#7 certs-only bundle.
    const offered = await call<null>(url, { insecure: true })
    expect(offered.status).toBe(200)
    expect(offered.type).toMatch(/^application\/pkcs7-mime/)
    expect(offered.text).toMatch(/^[A-Za-z0-9+/]+=*$/)
    const certs = [...new X509Certificates(offered.text)]
    expect(certs.map((c) => c.subject)).toEqual(['CN=walk-through root CA'])
    trust = certs.map((c) => c.toString('pem')).join('\n')
    // AreCertsTrusted, and every request after: the offered CA verifies the server's chain.
    expect((await call(url, { ca: trust })).status).toBe(200)
  })

  it('login discovers the management API in the CLI order, then logs in with a password', async () => {
    for (const path of ['/edge/management/v1/version', '/edge/client/v1/version', '/version']) {
      const res = await call<Envelope<Version>>(`${base}${path}`, { ca: trust })
      expect(res.status).toBe(200)
      expect(res.type).toMatch(/^application\/json/)
      expect(res.json.data.apiVersions['edge-management']?.v1).toEqual({
        path: '/edge/management/v1',
        apiBaseUrls: [`${base}/edge/management/v1`],
      })
      // The SDK the CLI logs in with would switch to /oidc with OIDC_AUTH.
      expect(res.json.data.capabilities).not.toContain('OIDC_AUTH')
    }
    mgmt = `${base}/edge/management/v1`
    const res = await call<Envelope<Session>>(`${mgmt}/authenticate?method=password`, {
      method: 'POST',
      ca: trust,
      body: { ...SDK_INFO, username: 'admin', password: ADMIN_PASSWORD },
    })
    expect(res.status).toBe(200)
    expect(res.type).toMatch(/^application\/json/)
    expect(res.json.data.token).toEqual(expect.any(String))
    expect(res.headers['zt-session']).toBe(res.json.data.token)
    session = res.json.data.token
  })

  it('create ext-jwt-signer, with the default body and with every flag', async () => {
    const discovery = (await (
      await fetch(`${provider.issuer}/.well-known/openid-configuration`)
    ).json()) as { jwks_uri: string }
    const corpPem = (await makeCert({ cn: 'corp signer' })).certPem
    const creates: [string, string, CreateFlags][] = [
      // ziti edge create ext-jwt-signer corp-default https://idp.corp.example -u ... -a ziti
      [
        'corp-default',
        'https://idp.corp.example',
        { jwksEndpoint: 'http://127.0.0.1:1/corp', audience: 'ziti' },
      ],
      // -f corp.pem -k corp-key-1 -a corp-aud -c email -x=false -e=false -y URL --client-id corp-cli
      // --scopes openid,email -t team=ops --tags-json '{"tier":1}'
      [
        'corp-cert',
        'https://cert.corp.example',
        {
          certPem: corpPem,
          kid: 'corp-key-1',
          audience: 'corp-aud',
          claimsProperty: 'email',
          externalId: false,
          enabled: false,
          externalAuthUrl: 'https://login.corp.example/authorize',
          clientId: 'corp-cli',
          scopes: ['openid', 'email'],
          tags: { team: 'ops', tier: 1 },
        },
      ],
      // -u JWKS_URI -a ziti-controller -c client_id -y URL --client-id ziti-tunneler --scopes api -t team=ops
      [
        'oidc',
        provider.issuer,
        {
          jwksEndpoint: discovery.jwks_uri,
          audience: 'ziti-controller',
          claimsProperty: 'client_id',
          externalAuthUrl: `${provider.issuer}/auth`,
          clientId: 'ziti-tunneler',
          scopes: ['api'],
          tags: { team: 'ops' },
        },
      ],
      [
        'partner-corp',
        'https://idp.partner.example',
        { jwksEndpoint: 'http://127.0.0.1:1/partner', audience: 'ziti' },
      ],
    ]
    for (const [name, issuer, flags] of creates) {
      const res = await admin<Envelope<{ id: string }>>('/external-jwt-signers', {
        method: 'POST',
        body: createBody(name, issuer, flags),
      })
      expect(res.status, res.text).toBe(201)
      expect(res.type).toMatch(/^application\/json/)
      expect(res.json.data.id).toEqual(expect.any(String))
      ids.set(name, res.json.data.id)
    }

    expect(await detail(ids.get('corp-default') as string)).toMatchObject({
      externalAuthUrl: null,
      useExternalId: true,
      claimsProperty: 'sub',
      scopes: null,
      tags: {},
      certPem: null,
      kid: null,
    })
    expect(await detail(ids.get('corp-cert') as string)).toMatchObject({
      kid: 'corp-key-1',
      fingerprint: expect.stringMatching(/^[0-9a-f]{40}$/),
      jwksEndpoint: null,
      enabled: false,
      useExternalId: false,
      claimsProperty: 'email',
      clientId: 'corp-cli',
      scopes: ['openid', 'email'],
      tags: { team: 'ops', tier: 1 },
    })
    // Only enabled signers with an externalAuthUrl are offered to clients ("" is not a URL).
    const offered = await call<Envelope<{ name: string }[]>>(
      `${base}/edge/client/v1/external-jwt-signers`,
      { ca: trust },
    )
    expect(offered.json.data.map((s) => s.name)).toEqual(['oidc'])
  })

  it.each([
    [
      'name contains "corp" sort by name limit 5',
      ['corp-cert', 'corp-default', 'partner-corp'],
      { limit: 5, offset: 0, totalCount: 3 },
    ],
    [
      'true limit none',
      ['corp-cert', 'corp-default', 'oidc', 'partner-corp'],
      { limit: -1, offset: 0, totalCount: 4 },
    ],
    ['not enabled', ['corp-cert'], { totalCount: 1 }],
    ['tags.team = "ops" SORT BY name DESC', ['oidc', 'corp-cert'], { totalCount: 2 }],
    [
      'issuer = "https://cert.corp.example" or name = "oidc" sort by name',
      ['corp-cert', 'oidc'],
      { totalCount: 2 },
    ],
    [
      'createdAt >= datetime(2020-01-01T00:00:00Z) sort by name skip 1 limit 2',
      ['corp-default', 'oidc'],
      { limit: 2, offset: 1, totalCount: 4 },
    ],
    ['name in ["oidc", "corp-cert"] and useExternalId = false', ['corp-cert'], { totalCount: 1 }],
  ])('list ext-jwt-signers %j', async (filter, names, pagination) => {
    const res = await list(filter)
    expect(res.status, res.text).toBe(200)
    expect(res.type).toMatch(/^application\/json/)
    const got = res.json.data.map((s) => s.name)
    expect(filter.includes('sort by') || filter.includes('SORT BY') ? got : got.sort()).toEqual(
      names,
    )
    expect(res.json.meta.pagination).toMatchObject(pagination)
    // runListExtJwtSigners dereferences these (and fingerprint for certificate signers).
    for (const s of res.json.data) {
      for (const key of ['id', 'name', 'audience', 'issuer', 'claimsProperty'] as const) {
        expect(s[key]).toEqual(expect.any(String))
      }
      expect([typeof s.enabled, typeof s.useExternalId]).toEqual(['boolean', 'boolean'])
      expect(s.jwksEndpoint ?? s.fingerprint).toEqual(expect.any(String))
    }
  })

  it('list answers a malformed filter with 400 INVALID_FILTER and its position', async () => {
    const res = await list('name contains "corp')
    expect(res.status).toBe(400)
    expect(res.type).toMatch(/^application\/json/)
    const body = res.json as unknown as ErrorBody // the error envelope, not a list
    expect(body.error.code).toBe('INVALID_FILTER')
    expect(body.error.cause?.reason).toMatch(/at position \d+$/)
  })

  /** mapNameToID of update: `id="X"`, and when nothing matches, `name="X"`. */
  async function mapNameToId(val: string): Promise<string> {
    const byId = await list(`id="${val}"`)
    expect(byId.status).toBe(200)
    if (byId.json.data.length > 0) return val
    const byName = await list(`name="${val}"`)
    expect(byName.json.data).toHaveLength(1)
    return (byName.json.data[0] as Signer).id
  }

  it('update ext-jwt-signer by name and by id: PATCH with the changed fields only', async () => {
    // ziti edge update ext-jwt-signer corp-default -a corp-aud-2 -y URL --client-id corp-cli-2
    const id = await mapNameToId('corp-default')
    expect(id).toBe(ids.get('corp-default'))
    const changes = {
      audience: 'corp-aud-2',
      externalAuthUrl: 'https://login.corp.example/authorize',
      clientId: 'corp-cli-2',
    }
    const res = await admin(`/external-jwt-signers/${id}`, {
      method: 'PATCH',
      body: patchBody(changes),
    })
    expect(res.status, res.text).toBe(200)
    expect(res.type).toMatch(/^application\/json/)
    expect(await detail(id)).toMatchObject({
      ...changes,
      issuer: 'https://idp.corp.example',
      jwksEndpoint: 'http://127.0.0.1:1/corp',
      useExternalId: true,
    })

    // ziti edge update ext-jwt-signer ID -n corp-renamed -e=false --scopes openid
    expect(await mapNameToId(id)).toBe(id)
    const renamed = { name: 'corp-renamed', enabled: false, scopes: ['openid'] }
    const again = await admin(`/external-jwt-signers/${id}`, {
      method: 'PATCH',
      body: patchBody(renamed),
    })
    expect(again.status, again.text).toBe(200)
    expect(await detail(id)).toMatchObject({ ...renamed, audience: 'corp-aud-2' })
  })

  it('delete ext-jwt-signer NAME looks the id up by `id = "X" or name="X"`, then DELETEs it', async () => {
    const lookup = () => list('id = "corp-renamed" or name="corp-renamed"')
    const found = await lookup()
    expect(found.status).toBe(200)
    expect(found.json.data.map((s) => s.id)).toEqual([ids.get('corp-default')])
    const id = (found.json.data[0] as Signer).id
    const res = await admin(`/external-jwt-signers/${id}`, { method: 'DELETE' })
    expect(res.status, res.text).toBe(200)
    expect(res.type).toMatch(/^application\/json/)
    expect((await admin(`/external-jwt-signers/${id}`)).status).toBe(404)
    expect((await lookup()).json.data).toEqual([])
  })

  it('login --ext-jwt with an access token from a real OpenID provider', async () => {
    const identity = await admin('/identities', {
      method: 'POST',
      body: { name: 'tunneler', externalId: 'ziti-tunneler', isAdmin: false },
    })
    expect(identity.status, identity.text).toBe(201)
    const jwt = await provider.accessToken('ziti-tunneler')
    // The CLI authenticates on the management API it discovered; SDKs on the client API.
    for (const api of [mgmt, `${base}/edge/client/v1`]) {
      const res = await call<Envelope<Session>>(`${api}/authenticate?method=ext-jwt`, {
        method: 'POST',
        ca: trust,
        headers: { authorization: `Bearer ${jwt}` },
        body: SDK_INFO,
      })
      expect(res.status, res.text).toBe(200)
      expect(res.type).toMatch(/^application\/json/)
      expect(res.json.data).toMatchObject({
        token: expect.any(String),
        authenticatorId: `extJwtId:${ids.get('oidc')}`,
        identity: { name: 'tunneler' },
      })
      const current = await call(`${api}/current-api-session`, {
        ca: trust,
        headers: { 'zt-session': res.json.data.token },
      })
      expect(current.status).toBe(200)
    }
  })
})
