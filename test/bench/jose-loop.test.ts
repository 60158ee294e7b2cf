import { join } from 'node:path'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { askingProcess } from '../../bench/processes.js'

// The built script (vitest's global setup builds dist/), as the bench forks it.
const script = join(import.meta.dirname, '../../dist/bench/jose-loop.js')

async function signer(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256')
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256' }] }
  const sign = (claims: { iss: string; aud: string }) =>
    new SignJWT({ sub: 'someone' })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(claims.iss)
      .setAudience(claims.aud)
      .setExpirationTime('1h')
      .sign(privateKey)
  return { jwks, sign }
}

describe("the login goal's jose.jwtVerify baseline, a process of its own", () => {
  it('verifies each turn of tokens and answers with the checks a second, turn after turn', async () => {
    const { jwks, sign } = await signer('k1')
    const tokens = await Promise.all(
      Array.from({ length: 20 }, () => sign({ iss: 'https://bench.idp', aud: 'ziti' })),
    )
    const loop = askingProcess(script, [JSON.stringify(jwks)])
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
    const { jwks, sign } = await signer('k1')
    const good = await sign({ iss: 'https://bench.idp', aud: 'ziti' })
    const wrongAudience = await sign({ iss: 'https://bench.idp', aud: 'someone-else' })
    const loop = askingProcess(script, [JSON.stringify(jwks)])
    try {
      expect(await loop.ask([good, wrongAudience])).toEqual({
        error: expect.stringMatching(/^token 1: .*"aud"/),
      })
      // and goes on answering
      expect(await loop.ask([good])).toEqual({ rate: expect.any(Number) })
    } finally {
      loop.stop()
    }
  })

  it('rejects the question, instead of waiting for ever, when the process ends first', async () => {
    const loop = askingProcess(script, ['{not json'])
    await expect(loop.ask(['x'])).rejects.toThrow(/ended \(1\) before it answered/)
    // asked again once it has ended: the send fails
    await expect(loop.ask(['x'])).rejects.toThrow(/channel closed/i)
  })
})
