import { randomBytes } from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** A random 22-character base-62 id (about 131 bits), in the style of the edge API's ids. */
export function newId(): string {
  let id = ''
  while (id.length < 22) {
    for (const byte of randomBytes(32)) {
      // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && id.length < 22) id += ALPHABET[byte % 62]
    }
  }
  return id
}
