/**
 * @module gateways/mcp/glob
 * The `find` tool's name patterns: `*` (any run of characters), `?` (one character),
 * `[abc]`, `[a-z]` and `[!abc]` (one of, or none of, a set); anything else stands for
 * itself (`\` escapes the next character). Matched against one entry name, whole and
 * case-sensitively, as a shell matches a file name.
 */

const SPECIAL = /[.*+?^${}()|[\]\\/]/g

export function globToRegExp(pattern: string): RegExp {
  let re = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === '*') re += '.*'
    else if (c === '?') re += '.'
    else if (c === '\\' && i + 1 < pattern.length) re += pattern[++i]!.replace(SPECIAL, '\\$&')
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2)
      if (end === -1) {
        re += '\\['
        continue
      }
      let set = pattern.slice(i + 1, end)
      const negate = set.startsWith('!') || set.startsWith('^')
      if (negate) set = set.slice(1)
      re += `[${negate ? '^' : ''}${set.replace(/[\\\]^]/g, '\\$&')}]`
      i = end
    } else re += c.replace(SPECIAL, '\\$&')
  }
  return new RegExp(`^${re}$`, 'su')
}
