import { VerifiedTokenCache } from '../jwt/verified-cache.js'

/** The longest token kept per connection: 16 KiB, Node's default limit of a request's headers. */
const MAX_BYTES = 16 * 1024

// The token of the request at hand as bytes, zero-padded to whole 32-bit words. One buffer for
// every connection: it is written and compared in one synchronous step.
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
  /** The token's length in code units (the words' padding hides the last word's count). */
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
 * another's. Only the length shows, as it does in the hash's own time.
 *
 * Speed path: the token is copied into a buffer by Node's encoder and compared 32 bits at a time,
 * about 0.13 µs for a 270-character ES256 token; a loop over its code units with `charCodeAt`
 * took 1.0 to 1.3 µs on the header's slice of a string, and `timingSafeEqual` 0.23 µs of call
 * overhead alone.
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
    const key = this.keyOf(token)
    this.kept.set(connection, { length: token.length, words: scratchWords.slice(0, words), key })
    return key
  }
}
