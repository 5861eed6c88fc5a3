/**
 * @module gateways/mcp/glob
 * The `find` tool's name patterns: `*` (any run of characters), `?` (one character),
 * `[abc]`, `[a-z]` and `[!abc]` (one of, or none of, a set); anything else stands for
 * itself (`\` escapes the next character). Matched against one entry name, whole and
 * case-sensitively, as a shell matches a file name.
 *
 * Matched by a wildcard matcher that only ever backtracks to the last `*`: its time is
 * at most (name length × pattern length), whatever the pattern. (A pattern turned into a
 * backtracking RegExp, `*a*a*a*…b`, ran for seconds on the main thread against one name.)
 */

type Token = { readonly kind: 'star' } | { readonly kind: 'one' } | { readonly kind: 'char'; readonly test: (c: string) => boolean }

function parseSet(body: string): (c: string) => boolean {
  const chars = [...body]
  const negate = chars[0] === '!' || chars[0] === '^'
  if (negate) chars.shift()
  const singles = new Set<string>()
  const ranges: [string, string][] = []
  for (let i = 0; i < chars.length; i++) {
    if (chars[i + 1] === '-' && i + 2 < chars.length) {
      if (chars[i]!.codePointAt(0)! > chars[i + 2]!.codePointAt(0)!) throw new RangeError(`the range ${chars[i]}-${chars[i + 2]} is backwards`)
      ranges.push([chars[i]!, chars[i + 2]!])
      i += 2
    } else singles.add(chars[i]!)
  }
  const inSet = (c: string): boolean => singles.has(c) || ranges.some(([lo, hi]) => (c.codePointAt(0) ?? 0) >= (lo.codePointAt(0) ?? 0) && (c.codePointAt(0) ?? 0) <= (hi.codePointAt(0) ?? 0))
  return negate ? (c) => !inSet(c) : inSet
}

function tokens(pattern: string): Token[] {
  const p = [...pattern] // code points, as names are compared
  const out: Token[] = []
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!
    if (c === '*') {
      if (out.at(-1)?.kind !== 'star') out.push({ kind: 'star' }) // `**` is `*`
    } else if (c === '?') out.push({ kind: 'one' })
    else if (c === '\\' && i + 1 < p.length) {
      const lit = p[++i]!
      out.push({ kind: 'char', test: (x) => x === lit })
    } else if (c === '[') {
      const end = p.indexOf(']', i + 2)
      if (end === -1) out.push({ kind: 'char', test: (x) => x === '[' })
      else {
        out.push({ kind: 'char', test: parseSet(p.slice(i + 1, end).join('')) })
        i = end
      }
    } else out.push({ kind: 'char', test: (x) => x === c })
  }
  return out
}

/** A predicate: does a whole name match `pattern`? @throws RangeError for a backwards range (`[z-a]`) */
export function globMatcher(pattern: string): (name: string) => boolean {
  const pat = tokens(pattern)
  return (name: string): boolean => {
    const s = [...name]
    let i = 0 // in s
    let j = 0 // in pat
    let starJ = -1 // the last `*` seen, and where in s it began to match
    let starI = 0
    while (i < s.length) {
      const tok = pat[j]
      if (tok && tok.kind === 'star') {
        starJ = j++
        starI = i
      } else if (tok && (tok.kind === 'one' || tok.test(s[i]!))) {
        i++
        j++
      } else if (starJ >= 0) {
        j = starJ + 1 // let the last `*` take one more character
        i = ++starI
      } else return false
    }
    while (pat[j]?.kind === 'star') j++
    return j === pat.length
  }
}
