/**
 * @module test/front/files.test
 * ls, mkdir, touch, mv and rm over real HTTP (docs/api.md, "Files"), and the seed's
 * walk-through in its order.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import yauzl from 'yauzl'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

type Call = ReturnType<typeof api>

interface Listing {
  status: string
  results: { name: string; type: string; size: number; time: number }[]
  permissions: Record<string, unknown>
}

const PERMISSIONS = ['can_create_directory', 'can_create_file', 'can_delete', 'can_move', 'can_read', 'can_rename', 'can_share', 'can_upload']

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  const body = (await res.json()) as Record<string, unknown>
  t.same(body, { status: 'error', code, message: body.message }, `${what}: envelope with code ${code}`)
  t.ok(typeof body.message === 'string' && body.message.length > 0, `${what}: a message`)
}

async function expectOk(t: Test, res: Response, what: string): Promise<void> {
  t.equal(res.status, 200, `${what}: 200`)
  t.same(await res.json(), { status: 'ok' }, `${what}: {"status":"ok"}`)
}

/** A server, alice's session and her folder on disk. */
async function setup(t: Test): Promise<{ call: Call; home: string; url: string; token: string }> {
  const { url, dataDir } = await startTestServer(t)
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice')
  mkdirSync(home, { recursive: true })
  return { call: api(url, token), home, url, token }
}

const plant = (home: string, files: Record<string, string>) => {
  for (const [rel, content] of Object.entries(files)) {
    const abs = join(home, rel)
    if (rel.endsWith('/')) mkdirSync(abs, { recursive: true })
    else {
      mkdirSync(join(abs, '..'), { recursive: true })
      writeFileSync(abs, content)
    }
  }
}

t.test('ls: the listing shape, sorted, with every permission', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'gamma.txt': 'hello', 'alpha/': '', 'beta.bin': '123456789', 'delta/inner.txt': 'x' })
  const before = Date.now()
  const res = await call('GET', '/api/files/ls', { path: '/' })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/)
  const json = (await res.json()) as Listing
  t.same(Object.keys(json).sort(), ['permissions', 'results', 'status'])
  t.equal(json.status, 'ok')
  t.same(
    json.results.map((e) => e.name),
    ['alpha', 'beta.bin', 'delta', 'gamma.txt'],
    'sorted by name',
  )
  for (const e of json.results) {
    t.same(Object.keys(e).sort(), ['name', 'size', 'time', 'type'], `${e.name}: exactly name, type, size, time`)
    t.ok(Number.isInteger(e.time) && Math.abs(e.time - before) < 60_000, `${e.name}: time in ms, close to now (${e.time})`)
  }
  const byName = Object.fromEntries(json.results.map((e) => [e.name, e]))
  t.match(byName.alpha, { type: 'directory', size: 0 })
  t.match(byName.delta, { type: 'directory', size: 0 }, 'a non-empty directory still has size 0')
  t.match(byName['beta.bin'], { type: 'file', size: 9 })
  t.match(byName['gamma.txt'], { type: 'file', size: 5 })
  t.same(Object.keys(json.permissions).sort(), PERMISSIONS, 'every permission key')
  for (const k of PERMISSIONS) t.equal(typeof json.permissions[k], 'boolean', `${k} is a boolean`)
  t.equal(json.permissions.can_read, true, 'a token session may read')
})

t.test('ls: a subdirectory, with or without a trailing slash', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'docs/a.txt': 'a', 'docs/b/': '' })
  for (const path of ['/docs', '/docs/', '//docs/./']) {
    const json = (await (await call('GET', '/api/files/ls', { path })).json()) as Listing
    t.same(
      json.results.map((e) => [e.name, e.type]),
      [
        ['a.txt', 'file'],
        ['b', 'directory'],
      ],
      path,
    )
  }
})

t.test('ls: a file → 400, a missing path → 404', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'file.txt': 'x' })
  await expectError(t, await call('GET', '/api/files/ls', { path: '/file.txt' }), 400, 'INVALID_INPUT', 'ls on a file')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/nope' }), 404, 'NOT_FOUND', 'ls on a missing path')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/nope/deeper/' }), 404, 'NOT_FOUND', 'ls below a missing path')
})

t.test('mkdir: creates parents; an existing one → 409', async (t) => {
  const { call, home } = await setup(t)
  await expectOk(t, await call('POST', '/api/files/mkdir', { path: '/a/b/c/' }), 'mkdir -p')
  t.ok(statSync(join(home, 'a', 'b', 'c')).isDirectory(), 'all levels exist on disk')
  await expectOk(t, await call('POST', '/api/files/mkdir', { path: '/plain' }), 'mkdir without trailing slash')
  t.ok(statSync(join(home, 'plain')).isDirectory())
  await expectError(t, await call('POST', '/api/files/mkdir', { path: '/a/b/c/' }), 409, 'CONFLICT', 'mkdir on an existing directory')
  await expectError(t, await call('POST', '/api/files/mkdir', { path: '/a' }), 409, 'CONFLICT', 'mkdir on an existing parent')
  plant(home, { 'f.txt': 'x' })
  await expectError(t, await call('POST', '/api/files/mkdir', { path: '/f.txt' }), 409, 'CONFLICT', 'mkdir on an existing file')
  t.equal(readFileSync(join(home, 'f.txt'), 'utf8'), 'x', 'the file is untouched')
})

t.test('touch: creates an empty file with its parents; an existing file is left as is', async (t) => {
  const { call, home } = await setup(t)
  await expectOk(t, await call('POST', '/api/files/touch', { path: '/new/deep/empty.txt' }), 'touch new')
  const st = statSync(join(home, 'new', 'deep', 'empty.txt'))
  t.ok(st.isFile())
  t.equal(st.size, 0, 'empty')
  plant(home, { 'keep.txt': 'precious content' })
  await expectOk(t, await call('POST', '/api/files/touch', { path: '/keep.txt' }), 'touch existing')
  t.equal(readFileSync(join(home, 'keep.txt'), 'utf8'), 'precious content', 'content unchanged')
  await expectError(t, await call('POST', '/api/files/touch', { path: '/dir/' }), 400, 'INVALID_INPUT', 'touch with a trailing slash')
})

t.test('mv: a file, renamed and moved into new parents', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'a.txt': 'AAA' })
  await expectOk(t, await call('POST', '/api/files/mv', { from: '/a.txt', to: '/b.txt' }), 'rename')
  t.notOk(existsSync(join(home, 'a.txt')), 'source gone')
  t.equal(readFileSync(join(home, 'b.txt'), 'utf8'), 'AAA', 'target has the content')
  await expectOk(t, await call('POST', '/api/files/mv', { from: '/b.txt', to: '/x/y/z/b.txt' }), 'move into missing parents')
  t.equal(readFileSync(join(home, 'x', 'y', 'z', 'b.txt'), 'utf8'), 'AAA', 'parents created')
})

t.test('mv: a directory with its contents', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'src/one.txt': '1', 'src/sub/two.txt': '2', 'src/empty/': '' })
  await expectOk(t, await call('POST', '/api/files/mv', { from: '/src/', to: '/dst/' }), 'move dir')
  t.notOk(existsSync(join(home, 'src')), 'source gone')
  t.equal(readFileSync(join(home, 'dst', 'one.txt'), 'utf8'), '1')
  t.equal(readFileSync(join(home, 'dst', 'sub', 'two.txt'), 'utf8'), '2')
  t.ok(statSync(join(home, 'dst', 'empty')).isDirectory(), 'empty subdirectory kept')
})

t.test('mv: conflicts and overwrite', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'a.txt': 'A', 'b.txt': 'B', 'dir/c.txt': 'C' })
  await expectError(t, await call('POST', '/api/files/mv', { from: '/a.txt', to: '/b.txt' }), 409, 'CONFLICT', 'target file exists')
  t.equal(readFileSync(join(home, 'a.txt'), 'utf8'), 'A', 'source untouched after 409')
  t.equal(readFileSync(join(home, 'b.txt'), 'utf8'), 'B', 'target untouched after 409')
  await expectError(t, await call('POST', '/api/files/mv', { from: '/a.txt', to: '/b.txt', overwrite: 'false' }), 409, 'CONFLICT', 'overwrite=false')
  await expectOk(t, await call('POST', '/api/files/mv', { from: '/a.txt', to: '/b.txt', overwrite: 'true' }), 'overwrite=true, two files')
  t.notOk(existsSync(join(home, 'a.txt')), 'source gone')
  t.equal(readFileSync(join(home, 'b.txt'), 'utf8'), 'A', 'target replaced')
  await expectError(t, await call('POST', '/api/files/mv', { from: '/b.txt', to: '/dir', overwrite: 'true' }), 409, 'CONFLICT', 'overwrite=true onto a directory')
  t.equal(readFileSync(join(home, 'dir', 'c.txt'), 'utf8'), 'C', 'the directory is untouched')
  t.equal(readFileSync(join(home, 'b.txt'), 'utf8'), 'A', 'the source is untouched')
  plant(home, { 'other/': '' })
  await expectError(t, await call('POST', '/api/files/mv', { from: '/other', to: '/dir', overwrite: 'true' }), 409, 'CONFLICT', 'a directory onto a directory')
  await expectError(t, await call('POST', '/api/files/mv', { from: '/dir', to: '/b.txt', overwrite: 'true' }), 409, 'CONFLICT', 'a directory onto a file')
  t.equal(readFileSync(join(home, 'b.txt'), 'utf8'), 'A', 'the file is untouched')
})

t.test('mv: a directory into itself → 400; a missing source → 404', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'dir/f.txt': 'f' })
  await expectError(t, await call('POST', '/api/files/mv', { from: '/dir', to: '/dir/inside' }), 400, 'INVALID_INPUT', 'into itself')
  await expectError(t, await call('POST', '/api/files/mv', { from: '/dir/', to: '/dir/a/b/' }), 400, 'INVALID_INPUT', 'deep into itself')
  t.equal(readFileSync(join(home, 'dir', 'f.txt'), 'utf8'), 'f', 'nothing moved')
  t.notOk(existsSync(join(home, 'dir', 'inside')))
  await expectError(t, await call('POST', '/api/files/mv', { from: '/ghost', to: '/x' }), 404, 'NOT_FOUND', 'missing source')
  t.notOk(existsSync(join(home, 'x')), 'no target appeared')
  await expectError(t, await call('POST', '/api/files/mv', { from: '/dir' }), 400, 'INVALID_INPUT', 'missing "to"')
  await expectError(t, await call('POST', '/api/files/mv', { to: '/dir2' }), 400, 'INVALID_INPUT', 'missing "from"')
})

t.test('rm: a file, a directory recursively, missing → 404, the root → 403', async (t) => {
  const { call, home } = await setup(t)
  plant(home, { 'f.txt': 'x', 'tree/a.txt': 'a', 'tree/sub/b.txt': 'b', 'tree/sub/empty/': '', 'keep.txt': 'k' })
  await expectOk(t, await call('POST', '/api/files/rm', { path: '/f.txt' }), 'rm file')
  t.notOk(existsSync(join(home, 'f.txt')))
  await expectOk(t, await call('POST', '/api/files/rm', { path: '/tree/' }), 'rm dir')
  t.notOk(existsSync(join(home, 'tree')), 'the whole tree is gone')
  await expectError(t, await call('POST', '/api/files/rm', { path: '/f.txt' }), 404, 'NOT_FOUND', 'rm missing')
  await expectError(t, await call('POST', '/api/files/rm', { path: '/' }), 403, 'FORBIDDEN', 'rm /')
  await expectError(t, await call('POST', '/api/files/rm', { path: '//./' }), 403, 'FORBIDDEN', 'rm / spelled //./')
  t.equal(readFileSync(join(home, 'keep.txt'), 'utf8'), 'k', 'the rest is untouched')
})

function zipNames(buf: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err)
      const names: string[] = []
      zip.on('entry', (e: yauzl.Entry) => {
        names.push(e.fileName)
        zip.readEntry()
      })
      zip.on('end', () => resolve(names.sort()))
      zip.on('error', reject)
      zip.readEntry()
    })
  })
}

t.test('the seed walk-through, in order', async (t) => {
  const { url } = await startTestServer(t)
  // 1. Create a tmp session.
  const session = await fetch(`${url}/api/session`, { method: 'POST', body: JSON.stringify({ type: 'tmp', userID: 'walker' }) })
  t.equal(session.status, 200)
  const { status, result } = (await session.json()) as { status: string; result: { authorization: string; home: string } }
  t.equal(status, 'ok')
  const call = api(url, result.authorization)
  // 2. ls /.
  const empty = (await (await call('GET', '/api/files/ls', { path: result.home })).json()) as Listing
  t.same({ status: empty.status, results: empty.results }, { status: 'ok', results: [] }, 'a new space is empty')
  // 3. Upload.
  const bytes = Buffer.from('hello from the walk-through\n\u00e9\u0000\u00ff', 'latin1')
  t.same(await (await call('POST', '/api/files/cat', { path: '/docs/hello.txt' }, { body: bytes })).json(), { status: 'ok' }, 'upload')
  // 4. Download the same bytes.
  const down = await call('GET', '/api/files/cat', { path: '/docs/hello.txt' })
  t.equal(down.status, 200)
  t.same(Buffer.from(await down.arrayBuffer()), bytes, 'same bytes back')
  // 5. Zip.
  const zip = await call('GET', '/api/files/zip', { path: '/docs/' })
  t.equal(zip.status, 200)
  const names = await zipNames(Buffer.from(await zip.arrayBuffer()))
  t.ok(names.includes('docs/hello.txt'), `the zip holds docs/hello.txt (${names.join(', ')})`)
  t.ok(
    names.every((n) => n === 'docs/' || n === 'docs/hello.txt'),
    'and nothing else',
  )
  // 6. mv.
  t.same(await (await call('POST', '/api/files/mv', { from: '/docs/hello.txt', to: '/docs/renamed.txt' })).json(), { status: 'ok' }, 'mv')
  const afterMv = (await (await call('GET', '/api/files/ls', { path: '/docs/' })).json()) as Listing
  t.same(
    afterMv.results.map((e) => e.name),
    ['renamed.txt'],
  )
  // 7. rm.
  t.same(await (await call('POST', '/api/files/rm', { path: '/docs/' })).json(), { status: 'ok' }, 'rm')
  // 8. mkdir.
  t.same(await (await call('POST', '/api/files/mkdir', { path: '/folder/' })).json(), { status: 'ok' }, 'mkdir')
  // 9. touch.
  t.same(await (await call('POST', '/api/files/touch', { path: '/folder/empty.txt' })).json(), { status: 'ok' }, 'touch')
  const root = (await (await call('GET', '/api/files/ls', { path: '/' })).json()) as Listing
  t.same(
    root.results.map((e) => [e.name, e.type]),
    [['folder', 'directory']],
    'only the folder is left',
  )
  const folder = (await (await call('GET', '/api/files/ls', { path: '/folder/' })).json()) as Listing
  t.same(
    folder.results.map((e) => [e.name, e.type, e.size]),
    [['empty.txt', 'file', 0]],
  )
})
