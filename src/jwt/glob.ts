/**
 * Whole-value glob matching with `*` (any run, empty included) and `?` (one character); `\`
 * makes the next character literal. No regular expression is built, so no pattern can make
 * matching slow beyond pattern length times value length (the classic two-pointer walk with one
 * backtrack point).
 */
export function globMatches(glob: string, value: string): boolean {
  const pattern = [...glob]
  const text = [...value]
  let p = 0
  let t = 0
  let starP = -1
  let starT = 0
  while (t < text.length) {
    const ch = pattern[p]
    if (ch === '*') {
      starP = p++
      starT = t
    } else if (ch === '?' || (ch === '\\' ? pattern[p + 1] === text[t] : ch === text[t])) {
      p += ch === '\\' ? 2 : 1
      t++
    } else if (starP !== -1) {
      p = starP + 1
      t = ++starT
    } else return false
  }
  while (pattern[p] === '*') p++
  return p === pattern.length
}

/** Why a glob cannot be used (a trailing lone `\`), or undefined. */
export function globProblem(glob: string): string | undefined {
  let escaped = false
  for (const ch of glob) escaped = !escaped && ch === '\\'
  return escaped ? 'ends with a lone backslash' : undefined
}
