import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Paired, paired } from './common.js'
import type { Controller } from './controller.js'
import { distinctLogins, LOGIN_TOKENS, type LoginFixture } from './login.js'

const FLOOD = 64
const here = dirname(fileURLToPath(import.meta.url))

/**
 * 64 clients sending wrong passwords (see flood-client.ts) in a process of their own, until `stop`
 * is called; `stop` resolves with the attempts they sent.
 */
async function passwordFlood(ctrl: Controller): Promise<() => Promise<number>> {
  const url = `${ctrl.base}/edge/management/v1/authenticate?method=password`
  const child = spawn(process.execPath, [join(here, 'flood-client.js'), url, String(FLOOD)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  while (!out.includes('started')) await new Promise((r) => setTimeout(r, 10))
  return async () => {
    child.kill('SIGTERM')
    await once(child, 'exit')
    return Number(out.split('\n')[1] ?? 0)
  }
}

/**
 * RS256 JWT logins per second (distinct tokens) during 64 concurrent wrong-password attempts, as
 * a ratio of the same without them (issue 29: password hashing is bounded, so JWT logins keep at
 * least half their speed).
 */
export async function benchPasswordFlood(ctrl: Controller, fixture: LoginFixture): Promise<Paired> {
  let tokens: string[] = []
  return paired(
    `ext-jwt login RS256 during ${FLOOD} wrong-password clients`,
    'without them',
    async () => {
      tokens = await fixture.tokens('RS256', LOGIN_TOKENS)
      return distinctLogins(ctrl, tokens)
    },
    async () => {
      const more = await fixture.tokens('RS256', LOGIN_TOKENS)
      const stop = await passwordFlood(ctrl)
      try {
        return await distinctLogins(ctrl, more)
      } finally {
        const sent = await stop()
        console.log(`  (the flood sent ${sent} wrong passwords meanwhile)`)
      }
    },
  )
}
