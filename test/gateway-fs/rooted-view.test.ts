/**
 * @module test/gateway-fs/rooted-view.test
 * A view shown from a folder of its storage (`root`, what a share link of a storage
 * whose spec cannot be rooted there gets), and a file share's view (`only`): nothing
 * outside the folder can be named, read, changed or listed, and no error, entry or
 * stream shows the owner's path above it. Over a real worker pool and the local driver.
 */
import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { FULL_ACCESS, READ_ONLY } from '../../core/permissions.js'
import type { RequestContext, View } from '../../core/view.js'
import { openView } from '../../gateways/connection/view.js'
import { WorkerPool } from '../../workers/pool.js'

const pool = new WorkerPool({ workers: 1, tasksPerWorker: 8, maxQueue: 100 })
t.teardown(() => pool.close())

const ctx = (): RequestContext => ({ requestId: 'rooted', signal: new AbortController().signal })
const OUTER = 'owners-private-folder'
const tree = { [OUTER]: { 'a.txt': 'hello', sub: { 'b.txt': 'inner' }, 'other.txt': 'not shared' }, 'secret.txt': 'outside' }

async function* bytes(s: string): AsyncIterable<Uint8Array> {
  yield Buffer.from(s)
}

async function text(v: View, path: string): Promise<string> {
  const s = await v.readFile(ctx(), path)
  const chunks: Uint8Array[] = []
  for await (const c of s.body) chunks.push(c)
  return Buffer.concat(chunks).toString()
}

/** The failure of `p`, checked to name no path above the view's root. */
async function failure(t: Test, p: Promise<unknown>, code: string, what: string): Promise<void> {
  await p.then(
    () => t.fail(`${what}: succeeded`),
    (err: { code?: string; message?: string; path?: string }) => {
      t.equal(err.code, code, `${what}: ${code} (${err.message})`)
      t.notMatch(`${err.message} ${err.path ?? ''}`, OUTER, `${what}: the error does not show the folder above the root`)
    },
  )
}

t.test('a view rooted at a folder: / is the folder, nothing above it is reached or shown', async (t) => {
  const dir = t.testdir(tree)
  const v = await openView({ pool, spec: { type: 'local', root: dir }, root: `/${OUTER}`, permissions: FULL_ACCESS, stagingDir: join(dir, '..', 'staging-rooted') })
  t.teardown(() => v.close())

  t.strictSame((await v.listAll(ctx(), '/')).map((e) => e.name).sort(), ['a.txt', 'other.txt', 'sub'], "the folder's entries at /")
  t.equal((await v.stat(ctx(), '/sub/b.txt')).path, '/sub/b.txt', 'entries carry paths under the view root')
  t.strictSame((await v.list(ctx(), '/sub')).entries.map((e) => e.path), ['/sub/b.txt'])
  t.equal(await text(v, '/a.txt'), 'hello')
  t.equal((await v.readFile(ctx(), '/a.txt')).head.entry.path, '/a.txt', "a read's head names the view path")

  await failure(t, v.stat(ctx(), '/secret.txt'), 'ENOENT', 'a name only the outer folder has')
  await failure(t, v.readFile(ctx(), '/missing.txt'), 'ENOENT', 'a missing file')
  await failure(t, v.listAll(ctx(), '/nope'), 'ENOENT', 'a missing folder')
  await failure(t, v.stat(ctx(), '/../secret.txt'), 'EINVAL', 'a path that climbs')
  await failure(t, v.mkdir(ctx(), '/sub'), 'EEXIST', 'an existing folder')
  await failure(t, v.move(ctx(), '/a.txt', '/other.txt', { overwrite: false }), 'EEXIST', 'a move onto a file')
  await failure(t, v.removeTree(ctx(), '/'), 'EACCES', 'the root removed')
  await failure(t, v.move(ctx(), '/', '/x', { overwrite: false }), 'EACCES', 'the root moved')

  await v.writeFile(ctx(), '/new/c.txt', bytes('made'), { overwrite: false })
  t.equal(readFileSync(join(dir, OUTER, 'new', 'c.txt'), 'utf8'), 'made', 'written inside the folder, folders made')
  await v.move(ctx(), '/new/c.txt', '/sub/c.txt', { overwrite: false })
  await v.removeTree(ctx(), '/new')
  t.notOk(existsSync(join(dir, OUTER, 'new')), 'removed inside the folder')
  t.equal(readFileSync(join(dir, 'secret.txt'), 'utf8'), 'outside', 'the outer file is untouched')
})

t.test("a file share's view: its one file, nothing else of its folder", async (t) => {
  const dir = t.testdir(tree)
  const v = await openView({ pool, spec: { type: 'local', root: dir }, root: `/${OUTER}`, only: 'a.txt', permissions: FULL_ACCESS, stagingDir: join(dir, '..', 'staging-only') })
  t.teardown(() => v.close())
  t.strictSame((await v.listAll(ctx(), '/')).map((e) => e.name), ['a.txt'], '/ lists the file alone')
  t.strictSame((await v.list(ctx(), '/')).entries.map((e) => e.name), ['a.txt'], 'in pages too')
  t.equal(await text(v, '/a.txt'), 'hello')
  await failure(t, v.readFile(ctx(), '/other.txt'), 'ENOENT', 'a file beside it')
  await failure(t, v.listAll(ctx(), '/sub'), 'ENOENT', 'a folder beside it')
  await failure(t, v.writeFile(ctx(), '/other.txt', bytes('x'), { overwrite: true }), 'EACCES', 'a write beside it')
  await failure(t, v.removeTree(ctx(), '/sub'), 'EACCES', 'a removal beside it')
  t.equal(readFileSync(join(dir, OUTER, 'other.txt'), 'utf8'), 'not shared', 'nothing beside it changed')
})

t.test("a rooted view's rights are its own: refused before anything changes", async (t) => {
  const dir = t.testdir(tree)
  const v = await openView({ pool, spec: { type: 'local', root: dir }, root: `/${OUTER}`, permissions: READ_ONLY, stagingDir: join(dir, '..', 'staging-ro') })
  t.teardown(() => v.close())
  t.equal(await text(v, '/sub/b.txt'), 'inner', 'reading is allowed')
  await failure(t, v.removeTree(ctx(), '/sub'), 'EACCES', 'no can_delete')
  await failure(t, v.writeFile(ctx(), '/a.txt', bytes('x'), { overwrite: true }), 'EACCES', 'no can_upload')
  await failure(t, v.makeFolders(ctx(), '/d/e'), 'EACCES', 'no can_create_directory')
  await failure(t, v.touch(ctx(), '/t.txt'), 'EACCES', 'no can_create_file')
  t.equal(readFileSync(join(dir, OUTER, 'sub', 'b.txt'), 'utf8'), 'inner', 'nothing changed')
})
