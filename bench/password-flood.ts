import { paired } from './common.js'
import type { Controller } from './controller.js'
import { distinctLogins, LOGIN_TOKENS, type LoginFixture } from './login.js'

const FLOOD = 64

/**
 * 64 clients sending wrong passwords, each attempt under a fresh user name (so no name reaches
 * its backoff and every attempt costs a full scrypt hash), until `stop` is called.
 */
function passwordFlood(ctrl: Controller): () => Promise<number> {
  let active = true
  let serial = 0
  const url = `${ctrl.base}/edge/management/v1/authenticate?method=password`
  const client = async () => {
    let n = 0
    while (active) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: `flood-${serial++}`, password: 'wrong-password-1' }),
      }).catch(() => undefined)
      await res?.arrayBuffer()
      n++
    }
    return n
  }
  const clients = Array.from({ length: FLOOD }, client)
  return async () => {
    active = false
    return (await Promise.all(clients)).reduce((a, b) => a + b, 0)
  }
}

/**
 * RS256 JWT logins per second (distinct tokens) during 64 concurrent wrong-password attempts, as
 * a ratio of the same without them (issue 29: password hashing is bounded, so JWT logins keep at
 * least half their speed).
 */
export async function benchPasswordFlood(ctrl: Controller, fixture: LoginFixture): Promise<number> {
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
      const stop = passwordFlood(ctrl)
      try {
        return await distinctLogins(ctrl, more)
      } finally {
        await stop()
      }
    },
  )
}
