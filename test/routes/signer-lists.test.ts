import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, forEachStore, login, testClock } from '../helpers/app.js'
import { makeCert } from '../helpers/certs.js'
import type { StoreKind } from '../helpers/stores.js'

const BASE = '/edge/management/v1/external-jwt-signers'
const CLIENT = '/edge/client/v1/external-jwt-signers'

/** POSTs a signer as the admin whose session `token` is. */
function postSigner(app: FastifyInstance, token: string, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: BASE, headers: { 'zt-session': token }, payload })
}

/** Creates `count` enabled signers with an externalAuthUrl, named `<prefix>-<i>`. */
async function createListed(app: FastifyInstance, token: string, prefix: string, count: number) {
  for (let i = 0; i < count; i++) {
    const res = await postSigner(app, token, {
      name: `${prefix}-${i}`,
      enabled: true,
      issuer: `https://${prefix}-${i}.example`,
      audience: 'ziti',
      jwksEndpoint: `https://${prefix}-${i}.example/jwks`,
      externalAuthUrl: `https://${prefix}-${i}.example/auth`,
    })
    expect(res.statusCode).toBe(201)
  }
}

async function seeded(options: { storeKind?: StoreKind; keepOpen?: boolean } = {}) {
  const clock = testClock()
  const app = await buildTestApp({ clock, ...options })
  const token = await login(app)
  const specs = [
    { name: 'corp-east', enabled: true, auth: true },
    { name: 'corp-west', enabled: false, auth: true },
    { name: 'partner', enabled: true, auth: false },
    { name: 'Corp-lab', enabled: true, auth: true },
  ]
  const ids: Record<string, string> = {}
  for (const s of specs) {
    clock.advance(1000)
    const res = await postSigner(app, token, {
      name: s.name,
      enabled: s.enabled,
      issuer: `https://${s.name}.example`,
      audience: 'ziti',
      jwksEndpoint: `https://${s.name}.example/jwks`,
      ...(s.auth ? { externalAuthUrl: `https://${s.name}.example/auth` } : {}),
    })
    ids[s.name] = res.json().data.id
  }
  return { app, token, ids }
}

/**
 * One seeded app for the cases of a describe that only read (a GET changes nothing), built before
 * them and closed after them: the same app each case would have built for itself.
 */
function seededForReads(storeKind?: StoreKind): () => Awaited<ReturnType<typeof seeded>> {
  let s: Awaited<ReturnType<typeof seeded>> | undefined
  beforeAll(async () => {
    s = await seeded({ ...(storeKind ? { storeKind } : {}), keepOpen: true })
  })
  afterAll(async () => {
    await s?.app.close()
  })
  return () => {
    if (!s) throw new Error('the seeded app was not built')
    return s
  }
}

async function names(app: FastifyInstance, token: string, query: string) {
  const res = await app.inject({
    method: 'GET',
    url: `${BASE}?${query}`,
    headers: { 'zt-session': token },
  })
  expect(res.statusCode).toBe(200)
  return res.json().data.map((d: { name: string }) => d.name)
}

const q = (params: Record<string, string>) => new URLSearchParams(params).toString()

forEachStore((kind) => {
  describe('signer lists', () => {
    it('filters with =, contains, icontains, booleans and and/or/not', async () => {
      const { app, token } = await seeded()
      const sortByName = { sort: 'name asc' }
      expect(await names(app, token, q({ filter: 'name = "partner"' }))).toEqual(['partner'])
      expect(await names(app, token, q({ filter: 'name contains "corp"', ...sortByName }))).toEqual(
        ['corp-east', 'corp-west'],
      )
      expect(
        await names(app, token, q({ filter: 'name icontains "corp"', ...sortByName })),
      ).toEqual(['Corp-lab', 'corp-east', 'corp-west'])
      expect(
        await names(
          app,
          token,
          q({ filter: 'name contains "corp" and enabled = true', ...sortByName }),
        ),
      ).toEqual(['corp-east'])
      expect(
        await names(
          app,
          token,
          q({ filter: 'issuer contains "west" or name = "partner"', ...sortByName }),
        ),
      ).toEqual(['corp-west', 'partner'])
      expect(await names(app, token, q({ filter: 'not enabled', ...sortByName }))).toEqual([
        'corp-west',
      ])
      expect(
        await names(app, token, q({ filter: 'name in ["partner", "Corp-lab"]', ...sortByName })),
      ).toEqual(['Corp-lab', 'partner'])
    })

    it('sorts by name, issuer and createdAt in both directions', async () => {
      const { app, token } = await seeded()
      expect(await names(app, token, q({ sort: 'createdAt desc' }))).toEqual([
        'Corp-lab',
        'partner',
        'corp-west',
        'corp-east',
      ])
      expect(await names(app, token, q({ sort: 'name desc' }))).toEqual([
        'partner',
        'corp-west',
        'corp-east',
        'Corp-lab',
      ])
      expect(await names(app, token, q({ sort: 'issuer asc' }))).toEqual(
        [
          'https://Corp-lab.example',
          'https://corp-east.example',
          'https://corp-west.example',
          'https://partner.example',
        ].map((i) => i.slice(8, -8)),
      )
    })

    it('pages with limit and offset and reports pagination', async () => {
      const { app, token } = await seeded()
      const res = await app.inject({
        method: 'GET',
        url: `${BASE}?${q({ limit: '2', offset: '1', sort: 'createdAt asc' })}`,
        headers: { 'zt-session': token },
      })
      expect(res.json().data.map((d: { name: string }) => d.name)).toEqual(['corp-west', 'partner'])
      expect(res.json().meta.pagination).toEqual({ limit: 2, offset: 1, totalCount: 4 })
      const capped = await app.inject({
        method: 'GET',
        url: `${BASE}?limit=100000`,
        headers: { 'zt-session': token },
      })
      expect(capped.json().meta.pagination).toEqual({ limit: 500, offset: 0, totalCount: 4 })
      const dflt = await app.inject({ method: 'GET', url: BASE, headers: { 'zt-session': token } })
      expect(dflt.json().meta.pagination.limit).toBe(10)
    })

    describe('with bad parameters', () => {
      const shared = seededForReads(kind)

      it.each([
        [{ limit: 'ten' }, 'INVALID_PAGINATION', 'limit'],
        [{ limit: '-1.5' }, 'INVALID_PAGINATION', 'limit'],
        [{ offset: '1.5' }, 'INVALID_PAGINATION', 'offset'],
        [{ filter: 'name = ' }, 'INVALID_FILTER', 'filter'],
        [{ filter: 'secret = "x"' }, 'INVALID_FILTER', 'filter'],
        [{ filter: 'name = "x" and' }, 'INVALID_FILTER', 'filter'],
        [{ filter: 'enabled = "yes"' }, 'INVALID_FILTER', 'filter'],
        [{ filter: `${'('.repeat(100)}enabled${')'.repeat(100)}` }, 'INVALID_FILTER', 'filter'],
        [{ filter: 'name = "x"; DROP TABLE signers' }, 'INVALID_FILTER', 'filter'],
        [{ sort: 'certPem asc' }, 'INVALID_SORT_IDENTIFIER', 'sort'],
        [{ sort: 'name sideways' }, 'INVALID_SORT_IDENTIFIER', 'sort'],
      ])('refuses bad list parameters %o with %s', async (params, code, field) => {
        const { app, token } = shared()
        const res = await app.inject({
          method: 'GET',
          url: `${BASE}?${q(params)}`,
          headers: { 'zt-session': token },
        })
        expect(res.statusCode).toBe(400)
        expect(res.json().error).toMatchObject({ code, cause: { field } })
      })
    })

    it('keeps substring search in step with renames and deletes, for short values, quotes and case', async () => {
      const { app, token, ids } = await seeded()
      const patch = (id: string, payload: object) =>
        app.inject({
          method: 'PATCH',
          url: `${BASE}/${id}`,
          headers: { 'zt-session': token },
          payload,
        })
      await patch(ids.partner as string, { name: 'vendor "quoted" idp' })
      expect(await names(app, token, q({ filter: 'name contains "partner"' }))).toEqual([])
      expect(await names(app, token, q({ filter: 'name contains "\\"quoted\\""' }))).toEqual([
        'vendor "quoted" idp',
      ])
      expect(await names(app, token, q({ filter: 'name contains "VENDOR"' }))).toEqual([])
      expect(await names(app, token, q({ filter: 'name icontains "VENDOR"' }))).toEqual([
        'vendor "quoted" idp',
      ])
      expect(await names(app, token, q({ filter: 'name contains "o"', sort: 'name' }))).toEqual([
        'Corp-lab',
        'corp-east',
        'corp-west',
        'vendor "quoted" idp',
      ])
      expect(
        await names(app, token, q({ filter: 'name not contains "corp"', sort: 'name' })),
      ).toEqual(['Corp-lab', 'vendor "quoted" idp'])
      await app.inject({
        method: 'DELETE',
        url: `${BASE}/${ids['corp-east']}`,
        headers: { 'zt-session': token },
      })
      expect(await names(app, token, q({ filter: 'name contains "east"' }))).toEqual([])
      expect(await names(app, token, q({ filter: 'issuer contains "corp-west.example"' }))).toEqual(
        ['corp-west'],
      )
    })

    it('treats filter values as data, never as SQL', async () => {
      const { app, token } = await seeded()
      expect(await names(app, token, q({ filter: `name = "x\\" or 1=1 --"` }))).toEqual([])
      expect(await names(app, token, q({ filter: 'name contains "%"' }))).toEqual([])
    })

    it('matches %, _ and \\ in a search value literally', async () => {
      const { app, token } = await seeded()
      for (const name of ['50%_off', '50xyoff', 'back\\slash', 'backxslash']) {
        const res = await postSigner(app, token, {
          name,
          enabled: true,
          issuer: `https://${name.replace(/[^a-z0-9]/g, '')}.example`,
          audience: 'ziti',
          jwksEndpoint: 'https://idp.example/jwks',
        })
        expect(res.statusCode).toBe(201)
      }
      expect(await names(app, token, q({ filter: 'name contains "0%_o"' }))).toEqual(['50%_off'])
      expect(await names(app, token, q({ filter: 'name icontains "%_OFF"' }))).toEqual(['50%_off'])
      expect(await names(app, token, q({ filter: 'name contains "_"' }))).toEqual(['50%_off'])
      expect(await names(app, token, q({ filter: 'name contains "k\\\\s"' }))).toEqual([
        'back\\slash',
      ])
    })

    it("filters on a certificate signer's fields and the enrollment settings, as OpenZiti lists them", async () => {
      const { app, token } = await seeded()
      const certs = {
        'cert-old': await makeCert({ cn: 'Old Root', notAfter: new Date('2030-01-01T00:00:00Z') }),
        'cert-new': await makeCert({ cn: 'New Root', notBefore: new Date('2025-06-01T00:00:00Z') }),
      }
      const settings = {
        'cert-old': { targetToken: 'ID', enrollAttributeClaimsSelector: '/groups' },
        'cert-new': {
          enrollToTokenEnabled: true,
          useExternalId: true,
          enrollNameClaimsSelector: '/email',
        },
      }
      const fingerprints: Record<string, string> = {}
      for (const [name, cert] of Object.entries(certs)) {
        const res = await postSigner(app, token, {
          name,
          enabled: true,
          issuer: `https://${name}.example`,
          audience: 'ziti',
          certPem: cert.certPem,
          kid: `${name}-kid`,
          clientId: `${name}-client`,
          ...settings[name as keyof typeof settings],
        })
        expect(res.statusCode, res.body).toBe(201)
        const read = await app.inject({
          method: 'GET',
          url: `${BASE}/${res.json().data.id}`,
          headers: { 'zt-session': token },
        })
        fingerprints[name] = read.json().data.fingerprint
        expect(fingerprints[name]).toMatch(/^[0-9a-f]{40}$/)
      }
      const jwksSigners = ['Corp-lab', 'corp-east', 'corp-west', 'partner']
      const filtered = (filter: string) => names(app, token, q({ filter, sort: 'name asc' }))
      expect(await filtered(`fingerprint = "${fingerprints['cert-new']}"`)).toEqual(['cert-new'])
      expect(await filtered('fingerprint != null')).toEqual(['cert-new', 'cert-old'])
      expect(await filtered('fingerprint = null')).toEqual(jwksSigners)
      expect(await filtered('commonName = "Old Root"')).toEqual(['cert-old'])
      expect(await filtered('commonName icontains "root"')).toEqual(['cert-new', 'cert-old'])
      // As the responses show it: "" on a JWKS signer.
      expect(await filtered('commonName = ""')).toEqual(jwksSigners)
      expect(await filtered('commonName between "A" and "O"')).toEqual(['cert-new'])
      const pemLine = certs['cert-new'].certPem.split('\n')[2] ?? ''
      expect(pemLine).toHaveLength(64)
      expect(await filtered(`certPem contains "${pemLine}"`)).toEqual(['cert-new'])
      expect(await filtered('notAfter < datetime(2031-01-01T00:00:00Z)')).toEqual(['cert-old'])
      expect(await filtered('notBefore > datetime(2024-01-01T00:00:00Z)')).toEqual(['cert-new'])
      expect(await filtered('clientId = "cert-old-client"')).toEqual(['cert-old'])
      expect(await filtered('enrollToTokenEnabled')).toEqual(['cert-new'])
      expect(await filtered('enrollToTokenEnabled = false and fingerprint != null')).toEqual([
        'cert-old',
      ])
      expect(await filtered('enrollToCertEnabled')).toEqual([])
      expect(await filtered('targetToken = "ID"')).toEqual(['cert-old'])
      expect(await filtered('enrollNameClaimsSelector = "/email"')).toEqual(['cert-new'])
      expect(await filtered('enrollAttributeClaimsSelector = "/groups"')).toEqual(['cert-old'])
      expect(await filtered('enrollAttributeClaimsSelector = "" and fingerprint != null')).toEqual([
        'cert-new',
      ])
      expect(await filtered('enrollAuthPolicyId != "default"')).toEqual([])
      const page = await app.inject({
        method: 'GET',
        url: `${BASE}?limit=1`,
        headers: { 'zt-session': token },
      })
      expect(page.json().meta.filterableFields).toEqual(
        expect.arrayContaining(['fingerprint', 'commonName', 'notBefore', 'notAfter', 'certPem']),
      )
    })
  })

  describe('client signer list', () => {
    it('needs no session and shows only enabled signers with an externalAuthUrl, four fields each', async () => {
      const { app, ids } = await seeded()
      const res = await app.inject({ method: 'GET', url: CLIENT })
      expect(res.statusCode).toBe(200)
      const body = res.json()
      expect(body.meta).toEqual({})
      const byName = Object.fromEntries(body.data.map((d: { name: string }) => [d.name, d]))
      expect(Object.keys(byName).sort()).toEqual(['Corp-lab', 'corp-east'])
      expect(byName['corp-east']).toEqual({
        id: ids['corp-east'],
        name: 'corp-east',
        externalAuthUrl: 'https://corp-east.example/auth',
        _links: { self: { href: `./external-jwt-signers/${ids['corp-east']}` } },
      })
    })

    it("leads each item's self link, resolved against the list, to that item; other signers are 404", async () => {
      const { app, ids } = await seeded()
      const list = (await app.inject({ method: 'GET', url: CLIENT })).json().data
      for (const item of list) {
        const url = new URL(item._links.self.href, `http://ctrl${CLIENT}`).pathname
        expect(url).toBe(`${CLIENT}/${item.id}`)
        const res = await app.inject({ method: 'GET', url }) // no session
        expect(res.statusCode).toBe(200)
        expect(res.json()).toEqual({ data: item, meta: {} })
      }
      // Disabled, without externalAuthUrl, unknown, or no id a server makes: not shown, 404.
      for (const id of [ids['corp-west'], ids.partner, 'nosuchsigner', 'a"b', 'x'.repeat(100)]) {
        const res = await app.inject({
          method: 'GET',
          url: `${CLIENT}/${encodeURIComponent(id as string)}`,
        })
        expect(res.statusCode, id).toBe(404)
        expect(res.json().error.code).toBe('NOT_FOUND')
      }
    })

    it('takes limit and offset', async () => {
      const { app } = await seeded()
      const res = await app.inject({ method: 'GET', url: `${CLIENT}?limit=1&offset=1` })
      expect(res.json().data).toHaveLength(1)
      const bad = await app.inject({ method: 'GET', url: `${CLIENT}?limit=x` })
      expect(bad.statusCode).toBe(400)
      expect(bad.json().error.code).toBe('INVALID_PAGINATION')
    })

    it('lists every listed signer without a limit (its empty meta tells of no other page); OpenZiti fields page by 10', async () => {
      const { app, token } = await seeded()
      await createListed(app, token, 'idp', 14)
      const names = async (url: string) => {
        const res = await app.inject({ method: 'GET', url })
        expect(res.statusCode).toBe(200)
        expect(res.json().meta).toEqual({})
        return (res.json().data as { name: string }[]).map((d) => d.name)
      }
      const all = await names(CLIENT)
      expect(all).toHaveLength(16) // corp-east, Corp-lab and the 14
      expect(new Set(all)).toEqual(
        new Set(['corp-east', 'Corp-lab', ...Array.from({ length: 14 }, (_, i) => `idp-${i}`)]),
      )
      expect(await names(`${CLIENT}?limit=0`)).toEqual(all) // 0: the list's default
      expect(await names(`${CLIENT}?limit=-1`)).toEqual(all)
      expect(await names(`${CLIENT}?limit=5&offset=3`)).toEqual(all.slice(3, 8))
      expect(
        await names(`${CLIENT}?filter=${encodeURIComponent('name contains "idp-1"')}`),
      ).toEqual(all.filter((n) => n.includes('idp-1')))

      const openziti = await buildTestApp({ config: { clientSignerFields: 'openziti' } })
      const admin = await login(openziti)
      await createListed(openziti, admin, 'oz', 12)
      const page = async (query: string) =>
        (await openziti.inject({ method: 'GET', url: `${CLIENT}${query}` })).json().data.length
      expect(await page('')).toBe(10)
      expect(await page('?limit=-1')).toBe(12)
    })

    it('follows changes: a disabled signer leaves the list', async () => {
      const { app, token, ids } = await seeded()
      await app.inject({
        method: 'PATCH',
        url: `${BASE}/${ids['corp-east']}`,
        headers: { 'zt-session': token },
        payload: { enabled: false },
      })
      const res = await app.inject({ method: 'GET', url: CLIENT })
      expect(res.json().data.map((d: { name: string }) => d.name)).toEqual(['Corp-lab'])
    })
  })
})

describe('hostile list parameters', () => {
  const LISTS = [BASE, '/edge/management/v1/identities', '/edge/management/v1/auth-policies']
  const BUILT_INS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']
  const shared = seededForReads()

  it.each(LISTS)(
    '%s answers 400 for built-in JavaScript property names in filter and sort',
    async (url) => {
      const { app, token } = shared()
      for (const name of BUILT_INS) {
        for (const [params, code, field] of [
          [{ filter: `${name} = "x"` }, 'INVALID_FILTER', 'filter'],
          [{ filter: name }, 'INVALID_FILTER', 'filter'],
          [{ sort: name }, 'INVALID_SORT_IDENTIFIER', 'sort'],
          [{ sort: `${name} desc` }, 'INVALID_SORT_IDENTIFIER', 'sort'],
        ] as const) {
          const res = await app.inject({
            method: 'GET',
            url: `${url}?${q(params)}`,
            headers: { 'zt-session': token },
          })
          expect(res.statusCode, `${url} ${JSON.stringify(params)}`).toBe(400)
          expect(res.json().error).toMatchObject({ code, cause: { field } })
        }
      }
    },
  )

  it.each([BASE, CLIENT])(
    '%s answers 400 in the envelope to a repeated query parameter',
    async (url) => {
      const { app, token } = shared()
      for (const name of ['filter', 'sort', 'limit', 'offset']) {
        const res = await app.inject({
          method: 'GET',
          url: `${url}?${name}=a&${name}=b`,
          headers: { 'zt-session': token },
        })
        expect(res.statusCode, name).toBe(400)
        expect(res.json()).toMatchObject({
          error: { code: 'COULD_NOT_VALIDATE', cause: { field: name } },
          meta: { apiVersion: '0.0.1' },
        })
      }
    },
  )
})

describe('filter clauses as operators type them', () => {
  async function page(app: FastifyInstance, token: string, url: string, query: string) {
    const res = await app.inject({
      method: 'GET',
      url: `${url}?${query}`,
      headers: { 'zt-session': token },
    })
    expect(res.statusCode, `${query}: ${res.body}`).toBe(200)
    const body = res.json()
    return {
      names: body.data.map((d: { name: string }) => d.name),
      pagination: body.meta?.pagination,
    }
  }

  it('reads sort by, skip and limit alone, in any case', async () => {
    const { app, token } = await seeded()
    const all = ['Corp-lab', 'corp-east', 'corp-west', 'partner']
    expect(
      await page(app, token, BASE, q({ filter: 'name contains "corp" sort by name limit 5' })),
    ).toEqual({
      names: ['corp-east', 'corp-west'],
      pagination: { limit: 5, offset: 0, totalCount: 2 },
    })
    expect(await page(app, token, BASE, q({ filter: 'TRUE SORT BY name DESC LIMIT 2' }))).toEqual({
      names: ['partner', 'corp-west'],
      pagination: { limit: 2, offset: 0, totalCount: 4 },
    })
    expect(await page(app, token, BASE, q({ filter: 'sort by name skip 1 limit 2' }))).toEqual({
      names: ['corp-east', 'corp-west'],
      pagination: { limit: 2, offset: 1, totalCount: 4 },
    })
    expect(await page(app, token, BASE, q({ filter: 'true limit none', sort: 'name' }))).toEqual({
      names: all,
      pagination: { limit: -1, offset: 0, totalCount: 4 },
    })
    expect((await page(app, token, BASE, q({ filter: 'true' }))).names).toHaveLength(4)
    expect((await page(app, token, BASE, q({ filter: 'false' }))).pagination.totalCount).toBe(0)
    expect((await page(app, token, BASE, q({ filter: 'limit 1' }))).names).toHaveLength(1)
  })

  it('combines with the query parameters as upstream: clauses win, sort only when the filter has none', async () => {
    const { app, token } = await seeded()
    const both = await page(
      app,
      token,
      BASE,
      q({
        filter: 'true sort by createdAt desc skip 1 limit 2',
        sort: 'name asc',
        limit: '1',
        offset: '3',
      }),
    )
    expect(both).toEqual({
      names: ['partner', 'corp-west'],
      pagination: { limit: 2, offset: 1, totalCount: 4 },
    })
    const params = await page(
      app,
      token,
      BASE,
      q({ filter: 'enabled = true', sort: 'name desc', limit: '1', offset: '1' }),
    )
    expect(params).toEqual({
      names: ['corp-east'],
      pagination: { limit: 1, offset: 1, totalCount: 3 },
    })
    const mixed = await page(
      app,
      token,
      BASE,
      q({ filter: 'true limit 1', offset: '2', sort: 'name' }),
    )
    expect(mixed).toEqual({
      names: ['corp-west'],
      pagination: { limit: 1, offset: 2, totalCount: 4 },
    })
    const capped = await page(app, token, BASE, q({ filter: 'true limit 100000' }))
    expect(capped.pagination.limit).toBe(500)
  })

  it('compares createdAt with >=, <= and a half-open between of datetimes', async () => {
    const { app, token } = await seeded()
    // seeded() creates one signer a second from 08:00:01 on.
    const at = (s: number) => `datetime(2026-11-22T08:00:0${s}Z)`
    const names = async (filter: string) =>
      (await page(app, token, BASE, q({ filter, sort: 'createdAt' }))).names
    expect(await names(`createdAt >= ${at(3)}`)).toEqual(['partner', 'Corp-lab'])
    expect(await names(`createdAt <= ${at(2)}`)).toEqual(['corp-east', 'corp-west'])
    expect(await names(`createdAt between ${at(2)} and ${at(4)}`)).toEqual(['corp-west', 'partner'])
    expect(await names(`createdAt not between ${at(2)} and ${at(4)}`)).toEqual([
      'corp-east',
      'Corp-lab',
    ])
  })

  it('compares tags.NAME on signers, identities and auth policies', async () => {
    const { app, token, ids } = await seeded()
    const call = (method: string, url: string, payload?: object) =>
      app.inject({
        method: method as 'GET',
        url,
        headers: { 'zt-session': token },
        ...(payload ? { payload } : {}),
      })
    await call('PATCH', `${BASE}/${ids.partner}`, { tags: { team: 'red', rank: 3, managed: true } })
    await call('PATCH', `${BASE}/${ids['corp-east']}`, { tags: { team: 'blue', rank: 1 } })
    const names = async (filter: string) =>
      (await page(app, token, BASE, q({ filter, sort: 'name' }))).names
    expect(await names('tags.team = "red"')).toEqual(['partner'])
    expect(await names('tags.rank >= 1 and tags.rank < 3')).toEqual(['corp-east'])
    expect(await names('tags.managed = true')).toEqual(['partner'])
    expect(await names('tags.team in ["red", "blue"]')).toEqual(['corp-east', 'partner'])
    expect(await names('tags.team != null')).toEqual(['corp-east', 'partner'])
    expect(await names('tags.team icontains "RE"')).toEqual(['partner'])
    await call('POST', '/edge/management/v1/identities', { name: 'tagged', tags: { site: 'x' } })
    const ids2 = await page(
      app,
      token,
      '/edge/management/v1/identities',
      q({ filter: 'tags.site = "x"' }),
    )
    expect(ids2.names).toEqual(['tagged'])
    const policies = await page(
      app,
      token,
      '/edge/management/v1/auth-policies',
      q({ filter: 'tags.site = "x"' }),
    )
    expect(policies.names).toEqual([])
  })

  describe('with a bad filter', () => {
    const shared = seededForReads()

    it.each([
      'name contains "corp" limit',
      'true limit 5 sort by name',
      'true sort by kid',
      'true skip 2000000',
      'createdAt > datetime(yesterday)',
      'tags = "x"',
      'name = "unbalanced',
    ])('answers 400 INVALID_FILTER with a position for %s', async (filter) => {
      const { app, token } = shared()
      const res = await app.inject({
        method: 'GET',
        url: `${BASE}?${q({ filter })}`,
        headers: { 'zt-session': token },
      })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toMatchObject({ code: 'INVALID_FILTER', cause: { field: 'filter' } })
      if (filter !== 'true skip 2000000')
        expect(res.json().error.cause.reason).toMatch(/at position \d+$/)
    })
  })

  it('filters, sorts and pages the client list on what it shows', async () => {
    const { app } = await seeded()
    const get = (query: string) => app.inject({ method: 'GET', url: `${CLIENT}?${query}` })
    const res = await get(q({ filter: 'name contains "e" sort by name desc limit none' }))
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ meta: {} })
    expect(res.json().data.map((d: { name: string }) => d.name)).toEqual(['corp-east'])
    const sorted = await get(q({ sort: 'name desc', limit: '1' }))
    expect(sorted.json().data.map((d: { name: string }) => d.name)).toEqual(['corp-east'])
    for (const filter of ['issuer contains "corp"', 'enabled = false', 'true sort by issuer']) {
      const refused = await get(q({ filter }))
      expect(refused.statusCode).toBe(400)
      expect(refused.json().error.code).toBe('INVALID_FILTER')
    }
  })

  it('takes at most 8 comparisons in a client list filter (anyone may ask it), and 256 in an admin list', async () => {
    const { app, token } = await seeded()
    const terms = (n: number) =>
      Array.from({ length: n }, (_, i) => `name contains "corp-${i}"`).join(' or ')
    const eight = await app.inject({ method: 'GET', url: `${CLIENT}?${q({ filter: terms(8) })}` })
    expect(eight.statusCode).toBe(200)
    for (const filter of [terms(9), `${terms(8)} or id in ["a", "b"]`]) {
      const nine = await app.inject({ method: 'GET', url: `${CLIENT}?${q({ filter })}` })
      expect(nine.statusCode).toBe(400)
      expect(nine.json().error).toMatchObject({
        code: 'INVALID_FILTER',
        cause: {
          field: 'filter',
          reason: expect.stringMatching(/^more than 8 comparisons at position \d+$/),
        },
      })
    }
    const admin = (filter: string) =>
      app.inject({
        method: 'GET',
        url: `${BASE}?${q({ filter })}`,
        headers: { 'zt-session': token },
      })
    const many = Array.from({ length: 256 }, (_, i) => `id = "${i}"`).join(' or ')
    expect((await admin(many)).statusCode).toBe(200)
    const tooMany = await admin(`${many} or id = "x"`)
    expect(tooMany.statusCode).toBe(400)
    expect(tooMany.json().error.cause.reason).toMatch(/^more than 256 comparisons/)
  })
})
