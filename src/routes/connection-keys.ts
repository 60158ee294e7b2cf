import { VerifiedTokenCache } from '../jwt/verified-cache.js'

/** The longest token kept per connection: 16 KiB, Node's default limit of a request's headers. */
const MAX_BYTES = 16 * 1024

// The token of the request at hand as bytes, zero-padded to whole 32-bit words. One buffer for
// every connection: ConnectionKeys.key reads what it wrote before it calls anything else.
const scratchWords = new Uint32Array(MAX_BYTES / 4)
const scratch = Buffer.from(scratchWords.buffer)

// A code unit that one byte cannot hold. Header values never have one (Node reads them as
// Latin-1), but a caller could pass any string: such a token is hashed, never kept.
const WIDE = /[\u0100-\uffff]/

/**
 * Writes `token` into the scratch buffer, a byte per code unit, zero-padded to whole words.
 * Returns the number of words, or -1 when a code unit needs more than a byte (the bytes would not
 * tell that token from another) or the token is too long.
 */
function load(token: string): number {
  const words = (token.length + 3) >>> 2
  if (words > scratchWords.length || WIDE.test(token)) return -1
  if (words > 0) scratchWords[words - 1] = 0 // the padding of the last word
  scratch.write(token, 0, token.length, 'latin1')
  return words
}

/**
 * Whether the first `words` words of the scratch buffer are `kept`, in a time that depends on the
 * word count alone: every word is read, whatever differs first.
 */
function sameWords(kept: Uint32Array, words: number): boolean {
  if (kept.length !== words) return false
  let diff = 0
  for (let i = 0; i < words; i++) diff |= (kept[i] ?? 0) ^ (scratchWords[i] ?? 0)
  return diff === 0
}

interface KeptToken {
  /** The token's length in code units: 'ab' and 'ab\0' have the same words, not this. */
  length: number
  /** The token, a byte per code unit, zero-padded to whole words. */
  words: Uint32Array
  /** Its cache key. */
  key: string
}

/**
 * The verified-token cache key (a hash) of the bearer token a connection presents, taken once per
 * connection for the token it repeats (a client presents the same JWT on every request) and again
 * only when the token differs. A connection keeps the token's bytes, not the header's string, and
 * only while it lives (a WeakMap keyed by the connection).
 *
 * The token is compared with the kept one in constant time (every word read, whatever differs
 * first): behind a load balancer one connection carries several clients' requests, and a
 * comparison that stopped at the first difference would time one client's token against
 * another's. What shows is the length and whether the token is the kept one, not where it differs.
 *
 * Speed path: Node's encoder copies the token and the words are compared 32 bits at a time; a
 * `charCodeAt` loop over the header's slice of a string cost 8 to 10 times as much (`npm run
 * bench`, goal 4, compares the route with and without the factor).
 */
export class ConnectionKeys {
  private readonly kept = new WeakMap<object, KeptToken>()

  constructor(private readonly keyOf: (token: string) => string = VerifiedTokenCache.key) {}

  key(connection: object, token: string): string {
    const words = load(token)
    if (words < 0) return this.keyOf(token)
    const last = this.kept.get(connection)
    if (last !== undefined && last.length === token.length && sameWords(last.words, words)) {
      return last.key
    }
    const kept = scratchWords.slice(0, words) // before keyOf, which may be anything
    const key = this.keyOf(token)
    this.kept.set(connection, { length: token.length, words: kept, key })
    return key
  }
}
