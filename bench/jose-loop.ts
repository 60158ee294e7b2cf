import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose'
import { loop } from './common.js'

/**
 * The login goal's baseline as a process of its own (`node dist/bench/jose-loop.js <jwks>`, forked
 * by the login fixture with an IPC channel): each message is a list of tokens, verified in a
 * sequential `jose.jwtVerify` loop with the options of the controller's signer (the tokens arrive
 * before its clock starts); the answer is `{ rate }`, checks a second, or `{ error }` naming the
 * token that did not verify. Apart from the load generator's process, neither side's garbage, timers or
 * compiled code rides into the other's turns.
 */
const jwks = JSON.parse(process.argv[2] ?? '{"keys":[]}') as JSONWebKeySet
const keys = createLocalJWKSet(jwks)
const options = { issuer: 'https://bench.idp', audience: 'ziti', requiredClaims: ['exp'] }

process.on('message', async (tokens: string[]) => {
  let i = 0
  try {
    const rate = await loop(() => jwtVerify(tokens[i++] as string, keys, options), tokens.length)
    process.send?.({ rate })
  } catch (err) {
    // A token the loop refuses would make its rate meaningless: the bench stops on this answer.
    process.send?.({ error: `token ${i - 1}: ${(err as Error).message}` })
  }
})
