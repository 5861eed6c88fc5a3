/**
 * The `find` tool's name patterns, as a shell matches file names; and a hostile pattern
 * cannot hold the main thread (a backtracking RegExp took seconds and more on
 * `*a*a*…b` against a long name: this file would then never end within tap's timeout).
 */
import t from 'tap'
import { globMatcher } from '../../../gateways/mcp/glob.js'

const m = (pattern: string, name: string) => globMatcher(pattern)(name)

t.test('shell-like matching of one whole name', async (t) => {
  t.ok(m('*.txt', 'notes.txt'))
  t.notOk(m('*.txt', 'notes.txt.bak'), 'whole name')
  t.ok(m('*', ''), '* matches nothing too')
  t.ok(m('a?c', 'abc'))
  t.notOk(m('a?c', 'ac'))
  t.ok(m('[a-c]x', 'bx'))
  t.notOk(m('[a-c]x', 'dx'))
  t.ok(m('[!a-c]x', 'dx'))
  t.notOk(m('[!a-c]x', 'ax'))
  t.ok(m('[xyz]', 'y'))
  t.ok(m('a\\*b', 'a*b'), 'escaped star is literal')
  t.notOk(m('a\\*b', 'axb'))
  t.ok(m('[', '['), 'an unclosed [ is literal')
  t.ok(m('*é*', 'résumé.pdf'), 'code points, not UTF-16 units')
  t.ok(m('?', '😀'), 'one character is one code point')
  t.notOk(m('Readme', 'README'), 'case-sensitive')
  t.ok(m('a*b*c', 'aXXbYYc'))
  t.notOk(m('a*b*c', 'aXXbYY'))
  t.ok(m('**a**', 'xxa'), 'runs of stars')
  t.throws(() => globMatcher('[z-a]'), RangeError, 'a backwards range is an error, not an empty set')
})

t.test('a pattern built to make a backtracking matcher explode ends at once', async (t) => {
  const name = 'a'.repeat(250)
  t.notOk(m('*a'.repeat(400) + 'b', name), 'no match, answered')
  t.ok(m('*a'.repeat(100), name), 'a match, answered')
})
