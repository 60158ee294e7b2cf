/**
 * The index of the first C0 control character (U+0000 to U+001F) in `text` that `allowed` does
 * not hold, or -1. Tab is always allowed; a NUL reaches no store intact (PostgreSQL refuses it in
 * text, SQLite's full-text index reads it as a syntax error) and the others only garble logs.
 */
export function controlCharAt(text: string, allowed = '\t'): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 && code !== 0x09 && !allowed.includes(text.charAt(i))) return i
  }
  return -1
}

const LONE_SURROGATE = /\p{Surrogate}/u

/**
 * Whether `text` holds a lone UTF-16 surrogate (only a JSON `\uD800` escape makes one): no store
 * keeps it (UTF-8 has no such character). PostgreSQL stores and compares it as U+FFFD, so a value
 * holding one would match a stored value it is not; SQLite stores bytes that are not UTF-8 and
 * reads them back as three U+FFFD, so the value stored is not the one sent.
 */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text)
}
