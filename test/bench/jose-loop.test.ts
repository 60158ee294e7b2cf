import { join } from 'node:path'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { askingProcess } from '../../bench/processes.js'

// The built script (vitest's global setup builds dist/), as the bench forks it.
const script = join(import.meta.dirname, '../../dist/bench/jose-loop.js')

/** A key of the bench's signer: tokens signed with it, and the baseline's process that knows it. */
async function signer() {
  const kid = 'k1'
  const { privateKey, publicKey } = await generateKeyPair('RS256')
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256' }] }
  const sign = (claims: { iss: string; aud: string }, expires = true) => {
    const jwt = new SignJWT({ sub: 'someone' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(claims.iss)
      .setAudience(claims.aud)
    return (expires ? jwt.setExpirationTime('1h') : jwt).sign(privateKey)
  }
  /** `count` tokens as the bench's signer accepts them. */
  const valid = (count: number) =>
    Promise.all(
      Array.from({ length: count }, () => sign({ iss: 'https://bench.idp', aud: 'ziti' })),
    )
  const start = () => askingProcess(script, [JSON.stringify(jwks)])
  return { sign, valid, start }
}

describe("the login goal's jose.jwtVerify baseline, a process of its own", () => {
  it('verifies each turn of tokens and answers with the checks a second, turn after turn', async () => {
    const { valid, start } = await signer()
    const tokens = await valid(20)
    const loop = start()
    try {
      for (let turn = 0; turn < 2; turn++) {
        const { rate } = (await loop.ask(tokens)) as { rate: number }
        expect(rate).toBeGreaterThan(0)
      }
    } finally {
      loop.stop()
    }
  })

  it('answers which token failed when one does not verify as the signer would', async () => {
    const { sign, valid, start } = await signer()
    const [good] = await valid(1)
    const refused = [
      [await sign({ iss: 'https://bench.idp', aud: 'someone-else' }), /"aud"/],
      [await sign({ iss: 'https://other.idp', aud: 'ziti' }), /"iss"/],
      [await sign({ iss: 'https://bench.idp', aud: 'ziti' }, false), /"exp"/],
    ] as const
    const loop = start()
    try {
      for (const [token, claim] of refused) {
        const answer = (await loop.ask([good, token])) as { error: string }
        expect(answer.error).toMatch(/^token 1: /)
        expect(answer.error).toMatch(claim)
      }
      // and goes on answering
      expect(await loop.ask([good])).toEqual({ rate: expect.any(Number) })
    } finally {
      loop.stop()
    }
  })

  it('takes one question at a time', async () => {
    const { valid, start } = await signer()
    const tokens = await valid(20)
    const loop = start()
    try {
      const first = loop.ask(tokens)
      await expect(loop.ask(tokens)).rejects.toThrow(/one question at a time/)
      expect(await first).toEqual({ rate: expect.any(Number) })
    } finally {
      loop.stop()
    }
  })

  it('rejects the question, instead of waiting for ever, when the process ends first', async () => {
    const loop = askingProcess(script, ['{not json'])
    await expect(loop.ask(['x'])).rejects.toThrow(/jose-loop\.js ended \(1\)/)
    // and every question after it
    await expect(loop.ask(['x'])).rejects.toThrow(/jose-loop\.js ended \(1\)/)
  })
})
