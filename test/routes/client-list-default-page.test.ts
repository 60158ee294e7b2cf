import { describe, expect, it } from 'vitest'
import { ClientSignerPages } from '../../src/routes/client-signers/pages.js'
import type { SignerService } from '../../src/signers/signer-service.js'

/** The three methods the pages use, over a fixed list whose reads are counted. */
function signerSource() {
  const reads: string[] = []
  let listener = () => {}
  const source = {
    onListChange: (l: () => void) => {
      listener = l
    },
    listForClient: async (q: { filter?: string }) => {
      reads.push(q.filter ?? '<default>')
      const items = [{ id: 's1', name: 'corp', externalAuthUrl: 'https://login.corp.example/auth' }]
      return { items, limit: -1, offset: 0, totalCount: 1 }
    },
    listVersion: () => 'v1',
  }
  // The pages call only these three members of the service.
  return { service: source as unknown as SignerService, reads, change: () => listener() }
}

describe('client list page cache (finding: cycling distinct query strings flushes its page cache)', () => {
  it('keeps the default page while distinct query strings come and go, and drops it on a change', async () => {
    const { service, reads, change } = signerSource()
    const pages = new ClientSignerPages(service)
    expect(pages.keptDefault()).toBeUndefined()
    const first = await pages.page({})
    expect(pages.keptDefault()?.etag).toBe(first.etag)
    for (let i = 0; i < 1000; i++) await pages.page({ filter: `name = "x${i}"` })
    expect(pages.keptDefault()?.etag).toBe(first.etag)
    await pages.page({})
    expect(reads.filter((r) => r === '<default>')).toHaveLength(1)

    change()
    expect(pages.keptDefault()).toBeUndefined()
    await pages.page({})
    expect(reads.filter((r) => r === '<default>')).toHaveLength(2)
  })
})
