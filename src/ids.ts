import { randomFillSync } from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const TIME_CHARS = 8 // 62^8 ms is about 6,900 years
const ID_LENGTH = 22

// Random bytes for ids are drawn from a pool refilled 4 KiB at a time: one call into the CSPRNG
// per about 270 ids instead of one per id. Ids are names, not secrets (tokens never come from here).
const pool = Buffer.alloc(4096)
let used = pool.length

function randomByte(): number {
  if (used === pool.length) {
    randomFillSync(pool)
    used = 0
  }
  return pool[used++] as number // within the pool
}

/**
 * A 22-character base-62 id in the style of the edge API's ids: 8 characters of the creation time
 * in milliseconds, then 14 random ones (about 83 bits). Ids of one table sort by creation, so the
 * rows and index entries each login writes land on the same last pages instead of random ones.
 */
export function newId(now = Date.now()): string {
  let time = ''
  for (let i = 0, t = now; i < TIME_CHARS; i++, t = Math.floor(t / 62)) {
    time = ALPHABET[t % 62] + time
  }
  let id = time
  while (id.length < ID_LENGTH) {
    const byte = randomByte()
    // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
    if (byte < 248) id += ALPHABET[byte % 62]
  }
  return id
}

// Session tokens draw from a pool of their own (one CSPRNG call per 128 tokens: a synchronous
// randomBytes call costs several microseconds of each login). Bytes are wiped once used.
const tokenPool = Buffer.alloc(32 * 128)
let tokenUsed = tokenPool.length

/** 256 random bits, base64url (43 characters): the secret part of a session token. */
export function newSecret(): string {
  if (tokenUsed === tokenPool.length) {
    randomFillSync(tokenPool)
    tokenUsed = 0
  }
  const bytes = tokenPool.subarray(tokenUsed, tokenUsed + 32)
  tokenUsed += 32
  const token = bytes.toString('base64url')
  bytes.fill(0)
  return token
}
