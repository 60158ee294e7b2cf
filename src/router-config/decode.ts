import type { Pos } from './tree.js'

/** The text of a configuration file, or where and why the router's YAML reader refuses it. */
export type Decoded = { text: string } | { pos: Pos; message: string }

const REFUSED = "the router's YAML reader (yaml.v2) refuses the file"

/** The line and column (both from 1) of the character at `index` of `text`. */
function posAt(text: string, index: number): Pos {
  const before = text.slice(0, index)
  const lineStart = before.lastIndexOf('\n') + 1
  return { line: before.split('\n').length, column: index - lineStart + 1 }
}

/** The offset of the first byte that does not begin a well-formed UTF-8 sequence, or -1. */
function invalidUtf8At(bytes: Uint8Array): number {
  let i = 0
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0
    if (lead < 0x80) {
      i++
      continue
    }
    // Continuation bytes, and the smallest code point that needs them (shorter is overlong).
    const [more, min]: [number, number] =
      lead >= 0xc2 && lead <= 0xdf
        ? [1, 0x80]
        : lead >= 0xe0 && lead <= 0xef
          ? [2, 0x800]
          : lead >= 0xf0 && lead <= 0xf4
            ? [3, 0x10000]
            : [0, 0]
    // A lead byte that starts nothing, or a sequence cut off by the end of the file.
    if (more === 0 || i + more >= bytes.length) return i
    let code = lead & (0x3f >> more)
    for (let k = 1; k <= more; k++) {
      const next = bytes[i + k] ?? 0
      if ((next & 0xc0) !== 0x80) return i
      code = (code << 6) | (next & 0x3f)
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return i
    i += more + 1
  }
  return -1
}

/** A UTF-16 code unit as messages name it: U+XXXX. */
export const codePoint = (c: number) => `U+${c.toString(16).toUpperCase().padStart(4, '0')}`

/** A character yaml.v2 refuses anywhere in a file, as U+XXXX, or undefined when it reads it. */
function refusedCharacter(text: string, i: number): string | undefined {
  const c = text.charCodeAt(i)
  const hex = codePoint(c)
  if (c >= 0xd800 && c <= 0xdbff) {
    const next = text.charCodeAt(i + 1)
    return next >= 0xdc00 && next <= 0xdfff ? undefined : `the unpaired surrogate ${hex}`
  }
  if (c >= 0xdc00 && c <= 0xdfff) {
    const before = text.charCodeAt(i - 1)
    return before >= 0xd800 && before <= 0xdbff ? undefined : `the unpaired surrogate ${hex}`
  }
  const allowed =
    c === 0x09 ||
    c === 0x0a ||
    c === 0x0d ||
    (c >= 0x20 && c <= 0x7e) ||
    c === 0x85 ||
    (c >= 0xa0 && c <= 0xfffd)
  return allowed ? undefined : `the control character ${hex}`
}

/**
 * Checks text as yaml.v2 reads it: only printable characters, tab and line breaks; a control
 * character is refused anywhere, even inside a value (write it as an escape in double quotes).
 */
export function checkCharacters(text: string): Decoded {
  for (let i = 0; i < text.length; i++) {
    const refused = refusedCharacter(text, i)
    if (refused) {
      return {
        pos: posAt(text, i),
        message: `${refused} is not allowed in a YAML file: ${REFUSED} (in a double-quoted value, write an escape such as \\n or \\x00)`,
      }
    }
  }
  return { text }
}

/**
 * The text of a file's bytes as yaml.v2 decodes them: UTF-16 (little or big endian) after its
 * byte order mark, UTF-8 otherwise, where a byte that is not UTF-8 is an error with its place.
 */
export function decodeConfig(bytes: Uint8Array): Decoded {
  const b0 = bytes[0]
  const b1 = bytes[1]
  if ((b0 === 0xff && b1 === 0xfe) || (b0 === 0xfe && b1 === 0xff)) {
    const body = Buffer.from(bytes.subarray(2))
    if (body.length % 2 === 1) {
      const text = body.subarray(0, body.length - 1)
      const decoded = b0 === 0xfe ? Buffer.from(text).swap16() : text
      const shown = decoded.toString('utf16le')
      return {
        pos: posAt(shown, shown.length),
        message: `the file ends in the middle of a UTF-16 character: ${REFUSED}`,
      }
    }
    return checkCharacters((b0 === 0xfe ? body.swap16() : body).toString('utf16le'))
  }
  const bad = invalidUtf8At(bytes)
  if (bad >= 0) {
    const before = Buffer.from(bytes.subarray(0, bad)).toString('utf8')
    const byte = (bytes[bad] ?? 0).toString(16).toUpperCase().padStart(2, '0')
    return {
      pos: posAt(before, before.length),
      message: `byte 0x${byte} is not UTF-8 (Latin-1 or another encoding?): ${REFUSED}; save the file as UTF-8`,
    }
  }
  return checkCharacters(Buffer.from(bytes).toString('utf8'))
}
