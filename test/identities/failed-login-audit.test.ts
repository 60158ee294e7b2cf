import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { buildApp } from '../../src/app.js'
import {
  ADMIN_USER,
  caller,
  forEachStore,
  login,
  loopbackOnlyResolver,
  testConfig,
} from '../helpers/app.js'
import { freshPostgresUrl } from '../helpers/stores.js'

forEachStore((kind) => {
  describe('a failed password login of a known name', () => {
    it('is stored even when the controller closes right after answering 401', async () => {
      let db: string
      if (kind === 'postgres') db = await freshPostgresUrl()
      else {
        const dir = mkdtempSync(join(tmpdir(), 'ctrl-failed-login-'))
        onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
        db = join(dir, 'controller.db')
      }
      // Both boots on the same database (buildTestApp would give each a fresh one).
      const start = () =>
        buildApp({
          config: testConfig({ dbPath: db }),
          logger: false,
          resolver: loopbackOnlyResolver,
        })
      const first = await start()
      const res = await first.inject({
        method: 'POST',
        url: '/edge/management/v1/authenticate?method=password',
        payload: { username: ADMIN_USER, password: 'not-the-password-1' },
      })
      expect(res.statusCode).toBe(401)
      await first.close() // at once: the event is written after the answer, and none is lost

      const second = await start()
      onTestFinished(() => second.close())
      const call = caller(second, await login(second))
      const filter = encodeURIComponent('action = "login-failed"')
      const events = (await call('GET', `/edge/management/v1/audit-events?filter=${filter}`)).json()
        .data as { actor: { name: string }; changedFields: string[]; requestId: string | null }[]
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({
        actor: { name: ADMIN_USER },
        changedFields: ['wrong-password'],
        // The refused request's id, as its 401 said: the event and the answer can be matched.
        requestId: res.json().error.requestId,
      })
      expect(res.json().error.requestId).toEqual(expect.any(String))
    })
  })
})
