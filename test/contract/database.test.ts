import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { tempDir } from '../backups/fixtures.js'
import { buildTestApp, login } from '../helpers/app.js'
import { loadContract, SPEC_AVAILABLE } from './edge-api-spec.js'

const M = '/edge/management/v1'

describe.skipIf(!SPEC_AVAILABLE)(
  'the database routes conform to the edge API specification',
  () => {
    it('snapshot (200 and 401), check-data-integrity (202) and data-integrity-results (200, before and after a check)', async () => {
      const management = loadContract('management')
      const app = await buildTestApp({
        config: { dbPath: join(tempDir(), 'controller.db'), snapshotDir: tempDir() },
      })
      const headers = { 'zt-session': await login(app) }
      const expectSpec = async (
        method: 'GET' | 'POST',
        path: string,
        status: number,
        h: Record<string, string> = headers,
      ) => {
        const res = await app.inject({ method, url: `${M}${path}`, headers: h })
        expect(res.statusCode, res.body).toBe(status)
        const body = res.json()
        expect(management.check(path, method.toLowerCase(), status, body), path).toEqual([])
        return body
      }
      await expectSpec('GET', '/database/data-integrity-results', 200)
      await expectSpec('POST', '/database/snapshot', 200)
      await expectSpec('POST', '/database/snapshot', 401, {})
      await expectSpec('POST', '/database/check-data-integrity', 202)
      for (;;) {
        const body = await expectSpec('GET', '/database/data-integrity-results', 200)
        if (!body.data.inProgress) break
        await new Promise((r) => setTimeout(r, 5))
      }
    })
  },
)
