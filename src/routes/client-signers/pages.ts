import type { ClientSignerFields } from '../../config.js'
import type { ClientSignerRow, SignerService } from '../../signers/signer-service.js'
import type { ListQuery } from '../common-schemas.js'
import { type CachedBody, pageKey, ResponseCache, tagged } from '../response-cache.js'

const DEFAULT_PAGE = pageKey({})

/**
 * The pages of the unauthenticated signer list, kept serialised until a signer changes (here, or
 * on another instance as the store tells), each with its entity tag.
 */
export class ClientSignerPages {
  // The default page is what every client asks for; it has a cache of its own, so that cycling
  // distinct query strings (which fill and flush the other one) cannot evict it.
  private readonly defaultPage = new ResponseCache(1)
  private readonly cache = new ResponseCache()

  constructor(
    private readonly signers: SignerService,
    private readonly fields: ClientSignerFields = 'seed',
  ) {
    signers.onListChange(() => {
      this.defaultPage.clear()
      this.cache.clear()
    })
  }

  /** The page of a validated query: kept, or read and serialised now. */
  async page(q: ListQuery): Promise<CachedBody> {
    // The seed's list has an empty meta, so nothing would tell a client that a page left signers
    // out: without a `limit` it lists them all. OpenZiti's pages by 10, as upstream, and its meta
    // says so (pagination and filterable fields, as on the management lists).
    const seed = this.fields === 'seed'
    const build = async () => {
      const found = await this.signers.listForClient(q, {
        withEnrollment: !seed,
        ...(seed ? { byDefault: 'none' as const } : {}),
      })
      if (seed) return JSON.stringify({ data: found.items.map(seedView), meta: {} })
      return JSON.stringify({
        data: found.items.map(openZitiView),
        meta: {
          pagination: { limit: found.limit, offset: found.offset, totalCount: found.totalCount },
          filterableFields: this.signers.clientFilterableFields,
        },
      })
    }
    const version = this.signers.listVersion()
    if (version === undefined) return tagged(await build())
    const key = pageKey(q)
    return (key === DEFAULT_PAGE ? this.defaultPage : this.cache).get(key, version, build)
  }

  /**
   * The detail a list item's `_links.self` leads to: the item as the list shows it, or undefined
   * when the list does not show that signer (disabled, no externalAuthUrl, unknown). Server-made
   * ids hold only letters and digits: any other text names no signer.
   */
  async one(id: string) {
    if (!/^[A-Za-z0-9]+$/.test(id)) return undefined
    const withEnrollment = this.fields === 'openziti'
    const [row] = (await this.signers.listForClient({ filter: `id = "${id}"` }, { withEnrollment }))
      .items
    if (!row) return undefined
    return { data: withEnrollment ? openZitiView(row) : seedView(row), meta: {} }
  }

  /**
   * The page of a query without parameters when it is kept and known to be current without asking
   * the store; undefined otherwise (the route then answers, reading what it needs).
   */
  keptDefault(): CachedBody | undefined {
    const version = this.signers.listVersion()
    return version === undefined ? undefined : this.defaultPage.peek(DEFAULT_PAGE, version)
  }
}

const links = (id: string) => ({ self: { href: `./external-jwt-signers/${id}` } })

/** The seed's view: how to start a login, nothing more. */
function seedView(s: ClientSignerRow) {
  return { id: s.id, name: s.name, externalAuthUrl: s.externalAuthUrl ?? '', _links: links(s.id) }
}

/**
 * OpenZiti's view (`clientExternalJwtSignerDetail`): what its clients need to run the provider's
 * login themselves, and whether the signer enrolls.
 */
function openZitiView(s: ClientSignerRow) {
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: s.tags,
    name: s.name,
    externalAuthUrl: s.externalAuthUrl ?? '',
    // Omitted when unset, as OpenZiti's list omits it (null would still read as unset).
    ...(s.clientId === null ? {} : { clientId: s.clientId }),
    scopes: s.scopes ?? [],
    audience: s.audience,
    targetToken: s.targetToken,
    enrollToCertEnabled: s.enrollToCertEnabled,
    enrollToTokenEnabled: s.enrollToTokenEnabled,
    openIdConfigurationUrl: `${s.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
    _links: links(s.id),
  }
}
