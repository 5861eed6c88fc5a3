/**
 * @module test/front/ls-pages.test
 * HTTP `ls` is bounded (docs/api.md, "Large folders, in pages"): a folder of
 * `ls_max_entries` entries or fewer answers as it always did; a larger one is refused
 * with 413 unless asked for in pages (`limit`, `cursor`), which give every entry once,
 * in UTF-8 byte order, each answer bounded. Also through a public share link, where six
 * listings of a huge folder at once once stalled everyone: another user is answered.
 * Answers are checked against docs/openapi.json (test/helpers/openapi.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer } from '../helpers/filegate.js'
import { createShare, expectError, viaShare } from '../helpers/share.js'

interface Listing {
  status: string
  results: { name: string; type: string }[]
  next_cursor?: string | null
}

const BIG = 25_000

t.test('ls: normal folders as before, huge ones refused whole and served in pages', async (t) => {
  const disk = t.testdir({ root: { small: { 'b.txt': 'b', 'a.txt': 'a', sub: {} } }, data: {} })
  const root = join(disk, 'root')
  mkdirSync(join(root, 'big'))
  for (let i = 0; i < BIG; i++) writeFileSync(join(root, 'big', `n${i}`), '')
  writeFileSync(join(root, 'big', 'é-accent'), '')
  const { url } = await startTestServer(t, { data_dir: join(disk, 'data'), connections: [{ label: 'disk', type: 'local', path: root }] })
  const login = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
  const token = ((await login.json()) as { result: { authorization: string } }).result.authorization
  const call = api(url, token)

  const small = (await (await call('GET', '/api/files/ls', { path: '/small/' })).json()) as Listing
  t.same(small.results.map((e) => e.name).sort(), ['a.txt', 'b.txt', 'sub'], 'a normal folder: every entry')
  t.notOk('next_cursor' in small, 'in the answer it always had (no paging field)')

  const whole = await call('GET', '/api/files/ls', { path: '/big/' })
  const text = await whole.clone().text()
  t.ok(text.length < 2000, `a huge folder is not sent whole (${text.length} bytes answered)`)
  await expectError(t, whole, 413, 'TOO_LARGE', 'ls of 25,001 entries')
  t.match(JSON.parse(text), { message: /holds 25001 entries, more than one answer holds \(10000\): ask for it in pages with limit=/ }, 'the message says how to page')

  const names: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const query: Record<string, string> = { path: '/big/', limit: '4000', ...(cursor === null ? {} : { cursor }) }
    const res = await call('GET', '/api/files/ls', query)
    t.equal(res.status, 200)
    const page = (await res.json()) as Listing
    t.ok(page.results.length <= 4000, `page ${++pages}: ${page.results.length} entries`)
    names.push(...page.results.map((e) => e.name))
    cursor = page.next_cursor ?? null
    t.ok('next_cursor' in page, 'a paged answer says where to go on')
  } while (cursor !== null && pages < 20)
  t.equal(pages, 7, 'seven pages of at most 4,000')
  t.equal(names.length, BIG + 1, 'every entry')
  t.equal(new Set(names).size, BIG + 1, 'each once')
  const sorted = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
  t.same(names, sorted, 'in UTF-8 byte order')
  t.equal(names.at(-1), 'é-accent')

  const onePage = (await (await call('GET', '/api/files/ls', { path: '/small/', limit: '2' })).json()) as Listing
  t.same([onePage.results.map((e) => e.name), typeof onePage.next_cursor], [['a.txt', 'b.txt'], 'string'], 'a small folder can be paged too')
  const rest = (await (await call('GET', '/api/files/ls', { path: '/small/', limit: '2', cursor: onePage.next_cursor! })).json()) as Listing
  t.same([rest.results.map((e) => e.name), rest.next_cursor], [['sub'], null], 'its last page ends with null')

  for (const limit of ['0', '-1', 'abc', '1.5', '10001', '']) await expectError(t, await call('GET', '/api/files/ls', { path: '/big/', limit }), 400, 'INVALID_INPUT', `limit=${limit}`)
  await expectError(t, await call('GET', '/api/files/ls', { path: '/big/', limit: '10', cursor: 'not-a-cursor' }), 400, 'INVALID_INPUT', 'a forged cursor')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/small/b.txt', limit: '10' }), 400, 'INVALID_INPUT', 'a file, paged')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/nope/', limit: '10' }), 404, 'NOT_FOUND', 'nothing there, paged')

  // Six listings of the huge folder through a public share link at once, while another user lists theirs.
  const share = await createShare(url, token, { path: '/big/' })
  const anon = viaShare(url, share.id)
  const flood = Array.from({ length: 6 }, () => anon('GET', '/api/files/ls', { path: '/' }).then(async (r) => [r.status, (await r.text()).length] as const))
  const mine = (await (await call('GET', '/api/files/ls', { path: '/small/' })).json()) as Listing
  t.equal(mine.results.length, 3, 'another user is answered while they run')
  for (const [status, bytes] of await Promise.all(flood)) t.same([status, bytes < 2000], [413, true], 'each share listing: 413, a short answer')
  const viaLink = (await (await anon('GET', '/api/files/ls', { path: '/', limit: '10' })).json()) as Listing
  t.same(viaLink.results.map((e) => e.name).slice(0, 2), ['n0', 'n1'], 'the share pages too')
})

t.test('ls_max_entries is configurable', async (t) => {
  const disk = t.testdir({ root: { ten: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}`, ''])) }, data: {} })
  const { url } = await startTestServer(t, { data_dir: join(disk, 'data'), ls_max_entries: 9, connections: [{ label: 'disk', type: 'local', path: join(disk, 'root') }] })
  const login = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ label: 'disk' }) })
  const call = api(url, ((await login.json()) as { result: { authorization: string } }).result.authorization)
  await expectError(t, await call('GET', '/api/files/ls', { path: '/ten/' }), 413, 'TOO_LARGE', '10 entries past a bound of 9')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/ten/', limit: '10' }), 400, 'INVALID_INPUT', 'a page larger than the bound')
  const page = (await (await call('GET', '/api/files/ls', { path: '/ten/', limit: '9' })).json()) as Listing
  t.equal(page.results.length, 9)
})
