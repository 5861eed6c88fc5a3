/**
 * Symlinks inside a served folder that point inside it. The story: `rm -r` on a
 * `current -> v2` link followed the link and emptied v2, and a link to an ancestor
 * made a zip of the folder walk forever. Removing a link removes the link; walks do
 * not descend into linked folders.
 */
import { mkdir, readFile, symlink, writeFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer } from '../helpers/filegate.js'
import { zipEntryNames } from '../helpers/transfers.js'

/** `root` is <testdir>/root; the server's data directory is a sibling (one testdir per test). */
async function localSession(t: Test, root: string) {
  const { url } = await startTestServer(t, { data_dir: join(root, '..', 'data'), connections: [{ label: 'files', type: 'local', path: root }] })
  const res = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'local' }) })
  const token = ((await res.json()) as { result: { authorization: string } }).result.authorization
  return api(url, token)
}


t.test('rm of a linked folder removes the link, not what it points at', async (t) => {
  const root = join(t.testdir({ root: { projects: { v2: { 'keep.txt': 'precious' } } } }), 'root')
  await symlink(join(root, 'projects', 'v2'), join(root, 'projects', 'current'))
  const call = await localSession(t, root)
  const lsRes = await call('GET', '/api/files/ls', { path: '/projects/' })
  const ls = (await lsRes.json()) as { results: { name: string; type: string }[] }
  t.equal(lsRes.status, 200)
  t.same(ls.results.map((e) => [e.name, e.type]), [['current', 'directory'], ['v2', 'directory']], 'the link lists as a folder')
  const res = await call('POST', '/api/files/rm', { path: '/projects/current/' })
  t.equal(res.status, 200)
  t.same((await readdir(join(root, 'projects'))).sort(), ['v2'], 'the link is gone')
  t.equal(await readFile(join(root, 'projects', 'v2', 'keep.txt'), 'utf8'), 'precious', 'the target is untouched')
})

t.test('a link to an ancestor does not trap a zip', async (t) => {
  const root = join(t.testdir({ root: { docs: { 'a.txt': 'a', sub: { 'b.txt': 'b' } } } }), 'root')
  await symlink(join(root, 'docs'), join(root, 'docs', 'sub', 'loop'))
  await mkdir(join(root, 'docs', 'empty'))
  await writeFile(join(root, 'docs', 'empty', '.keep'), '')
  const call = await localSession(t, root)
  const res = await call('GET', '/api/files/zip', { path: '/docs/' })
  t.equal(res.status, 200)
  const names = (await zipEntryNames(Buffer.from(await res.arrayBuffer()))).sort()
  t.same(names, ['docs/', 'docs/a.txt', 'docs/empty/', 'docs/empty/.keep', 'docs/sub/', 'docs/sub/b.txt', 'docs/sub/loop/'], 'the looping link is an entry, not a walk')
  const direct = await call('GET', '/api/files/zip', { path: '/docs/sub/loop/' })
  t.equal(direct.status, 200, 'a linked folder named directly is zipped')
  t.ok((await zipEntryNames(Buffer.from(await direct.arrayBuffer()))).includes('loop/a.txt'))
})
