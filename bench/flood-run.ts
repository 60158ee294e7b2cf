import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startController } from './controller.js'
import { loginFixture } from './login.js'
import { benchPasswordFlood } from './password-flood.js'

/**
 * `npm run bench:flood`: only the password-flood goal of `npm run bench` (issue 29), against a
 * SQLite controller started as `npm start` runs it.
 */
const dir = mkdtempSync(join(tmpdir(), 'ctrl-flood-'))
const ctrl = await startController(join(dir, 'bench.db'))
const fixture = await loginFixture(ctrl)
try {
  const ratio = await benchPasswordFlood(ctrl, fixture)
  console.log(
    `JWT logins during a password flood / without: median ${ratio.median.toFixed(2)}, lowest ${ratio.lowest.toFixed(2)} (goal 0.5 on the median)`,
  )
} finally {
  fixture.close()
  await ctrl.stop()
  rmSync(dir, { recursive: true, force: true })
}
