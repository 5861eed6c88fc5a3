/**
 * @module test/front/upload.test
 * POST /api/files/cat over real HTTP (docs/api.md, "Files"): creates, replaces,
 * overwrite=false, streamed and empty bodies, directory targets, aborted uploads
 * (atomic: the old content stays and no temporary file is left) and the size limit.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import type { ClientRequest } from 'node:http'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { startUpload } from '../helpers/transfers.js'

const MiB = 1024 * 1024

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  const body = (await res.json()) as Record<string, unknown>
  t.same(body, { status: 'error', code, message: body.message }, `${what}: envelope with code ${code}`)
}

async function setup(t: Test, overrides: Record<string, unknown> = {}) {
  const { url, dataDir } = await startTestServer(t, overrides)
  const token = await tmpSession(url, 'alice')
  const home = join(dataDir, 'tmp', 'alice')
  mkdirSync(home, { recursive: true })
  return { url, token, home, call: api(url, token) }
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

/** Every file (not directory) under `dir`, hidden ones included, relative and sorted. */
function filesUnder(dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const abs = join(d, e.name)
      if (e.isDirectory()) walk(abs)
      else out.push(relative(dir, abs))
    }
  }
  walk(dir)
  return out.sort()
}

/** Polls `check` until it is true or `ms` pass; answers its last value. */
async function until(check: () => boolean, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 25))
  }
  return true
}


/** Writes `bytes` in `chunk`-sized pieces, waiting for each to be flushed; stops early when `stop()` says so. */
async function writeSlowly(req: ClientRequest, bytes: Buffer, chunk: number, stop: () => boolean = () => false): Promise<void> {
  for (let off = 0; off < bytes.length && !stop(); off += chunk) {
    await new Promise<void>((resolve, reject) => req.write(bytes.subarray(off, off + chunk), (err) => (err ? reject(err) : resolve())))
  }
}

t.test('upload creates the file and its parents; download gives the same bytes', async (t) => {
  const { call, home } = await setup(t)
  const body = randomBytes(100_000)
  const res = await call('POST', '/api/files/cat', { path: '/a/b/c/data.bin' }, { body })
  t.equal(res.status, 200)
  t.same(await res.json(), { status: 'ok' })
  t.same(readFileSync(join(home, 'a', 'b', 'c', 'data.bin')), body, 'on disk')
  const back = await call('GET', '/api/files/cat', { path: '/a/b/c/data.bin' })
  t.same(Buffer.from(await back.arrayBuffer()), body, 'downloaded back')
})

t.test('upload replaces an existing file; overwrite=false refuses with 409', async (t) => {
  const { call, home } = await setup(t)
  writeFileSync(join(home, 'f.txt'), 'old content')
  t.equal((await call('POST', '/api/files/cat', { path: '/f.txt' }, { body: 'new' })).status, 200)
  t.equal(readFileSync(join(home, 'f.txt'), 'utf8'), 'new', 'replaced, and not padded with the old bytes')
  t.equal((await call('POST', '/api/files/cat', { path: '/f.txt', overwrite: 'true' }, { body: 'newer' })).status, 200)
  t.equal(readFileSync(join(home, 'f.txt'), 'utf8'), 'newer', 'overwrite=true replaces')
  await expectError(t, await call('POST', '/api/files/cat', { path: '/f.txt', overwrite: 'false' }, { body: 'refused' }), 409, 'CONFLICT', 'overwrite=false')
  t.equal(readFileSync(join(home, 'f.txt'), 'utf8'), 'newer', 'old content intact after 409')
  t.same(filesUnder(home), ['f.txt'], 'no temporary file left')
  t.equal((await call('POST', '/api/files/cat', { path: '/g.txt', overwrite: 'false' }, { body: 'fresh' })).status, 200, 'overwrite=false on a new path')
  t.equal(readFileSync(join(home, 'g.txt'), 'utf8'), 'fresh')
  await expectError(t, await call('POST', '/api/files/cat', { path: '/g.txt', overwrite: 'maybe' }, { body: 'x' }), 400, 'INVALID_INPUT', 'overwrite=maybe')
  t.equal(readFileSync(join(home, 'g.txt'), 'utf8'), 'fresh')
})

t.test('a streamed (chunked, no Content-Length) body of several MiB arrives intact', async (t) => {
  const { url, token, home } = await setup(t)
  const body = randomBytes(7 * MiB + 333)
  const { req, response } = startUpload(url, token, '/stream/big.bin', {})
  await writeSlowly(req, body, 256 * 1024 + 7)
  req.end()
  const res = await response
  t.equal(req.getHeader('content-length'), undefined, 'sent without Content-Length')
  t.equal(res.status, 200, res.body)
  t.equal(sha(readFileSync(join(home, 'stream', 'big.bin'))), sha(body), 'sha256 on disk')
  t.same(filesUnder(home), ['stream/big.bin'], 'no temporary file left')
})

t.test('a zero-byte upload creates an empty file, and empties an existing one', async (t) => {
  const { call, home } = await setup(t)
  t.equal((await call('POST', '/api/files/cat', { path: '/empty.txt' }, { body: '' })).status, 200)
  t.equal(statSync(join(home, 'empty.txt')).size, 0)
  t.equal((await call('POST', '/api/files/cat', { path: '/nobody.txt' })).status, 200, 'no body at all')
  t.equal(statSync(join(home, 'nobody.txt')).size, 0)
  writeFileSync(join(home, 'full.txt'), 'full')
  t.equal((await call('POST', '/api/files/cat', { path: '/full.txt' }, { body: '' })).status, 200)
  t.equal(statSync(join(home, 'full.txt')).size, 0, 'emptied')
})

t.test('upload to a directory path → 400', async (t) => {
  const { call, home } = await setup(t)
  mkdirSync(join(home, 'dir'))
  writeFileSync(join(home, 'dir', 'inside.txt'), 'kept')
  await expectError(t, await call('POST', '/api/files/cat', { path: '/newdir/' }, { body: 'x' }), 400, 'INVALID_INPUT', 'trailing slash')
  await expectError(t, await call('POST', '/api/files/cat', { path: '/' }, { body: 'x' }), 400, 'INVALID_INPUT', 'the root')
  await expectError(t, await call('POST', '/api/files/cat', { path: '/dir' }, { body: 'x' }), 400, 'INVALID_INPUT', 'onto an existing directory')
  t.ok(statSync(join(home, 'dir')).isDirectory(), 'the directory is still there')
  t.same(filesUnder(home), ['dir/inside.txt'], 'nothing written, no temporary file')
  writeFileSync(join(home, 'plain.txt'), 'p')
  await expectError(t, await call('POST', '/api/files/cat', { path: '/plain.txt/child.txt' }, { body: 'x' }), 400, 'INVALID_INPUT', 'below a file')
  t.equal(readFileSync(join(home, 'plain.txt'), 'utf8'), 'p')
})

/** Sends `sent` bytes of an announced `announced`, waits for the server to start writing, then cuts the connection. */
async function abortHalfway(t: Test, url: string, token: string, home: string, path: string, before: string[]): Promise<void> {
  const announced = 10 * MiB
  const sent = 3 * MiB
  const { req } = startUpload(url, token, path, { 'content-length': announced })
  req.on('error', () => {}) // we cut it ourselves
  await writeSlowly(req, randomBytes(sent), 128 * 1024)
  // The server is now writing somewhere (a temporary file): wait to see it, so the abort
  // really happens mid-write (if it is not visible, the abort still happens).
  const started = await until(() => filesUnder(home).length > before.length, 20_000)
  t.ok(started, 'the server had started writing before the abort')
  req.destroy()
  const clean = await until(() => filesUnder(home).join('\n') === before.join('\n'), 5000)
  t.ok(clean, `no temporary file left (found: ${filesUnder(home).join(', ')})`)
}

t.test('an upload aborted halfway leaves the old content and no temporary file', async (t) => {
  const { url, token, home, call } = await setup(t)
  const old = randomBytes(50_000)
  mkdirSync(join(home, 'sub'))
  writeFileSync(join(home, 'sub', 'target.bin'), old)
  await abortHalfway(t, url, token, home, '/sub/target.bin', ['sub/target.bin'])
  t.same(readFileSync(join(home, 'sub', 'target.bin')), old, 'old content intact')
  // The server is fine afterwards.
  const again = await call('GET', '/api/files/cat', { path: '/sub/target.bin' })
  t.same(Buffer.from(await again.arrayBuffer()), old, 'old content served')
})

t.test('a first-time upload aborted halfway leaves nothing', async (t) => {
  const { url, token, home, call } = await setup(t)
  await abortHalfway(t, url, token, home, '/fresh.bin', [])
  t.same(filesUnder(home), [], 'no file, no temporary file')
  const ls = (await (await call('GET', '/api/files/ls', { path: '/' })).json()) as { results: unknown[] }
  t.same(ls.results, [], 'nothing listed')
})

t.test('max_upload_bytes: a too-large Content-Length → 413, nothing written', async (t) => {
  const { url, token, home } = await setup(t, { max_upload_bytes: MiB })
  writeFileSync(join(home, 'keep.bin'), 'keep')
  const { req, response } = startUpload(url, token, '/keep.bin', { 'content-length': 2 * MiB })
  req.on('error', () => {})
  let answered = false
  void response.then(() => (answered = true), () => {})
  await writeSlowly(req, randomBytes(2 * MiB), 64 * 1024, () => answered).catch(() => {})
  const res = await response
  req.destroy()
  t.equal(res.status, 413)
  t.match(JSON.parse(res.body), { status: 'error', code: 'TOO_LARGE' })
  t.ok(await until(() => filesUnder(home).join() === 'keep.bin', 3000), 'no temporary file left')
  t.equal(readFileSync(join(home, 'keep.bin'), 'utf8'), 'keep', 'the old file is intact')
})

t.test('max_upload_bytes: a chunked body that goes over → 413, nothing written', async (t) => {
  const { url, token, home, call } = await setup(t, { max_upload_bytes: MiB })
  const { req, response } = startUpload(url, token, '/over.bin', {})
  req.on('error', () => {})
  let answered = false
  void response.then(() => (answered = true), () => {})
  await writeSlowly(req, randomBytes(3 * MiB), 64 * 1024, () => answered).catch(() => {})
  if (!answered) req.end()
  const res = await response
  req.destroy()
  t.equal(res.status, 413)
  t.match(JSON.parse(res.body), { status: 'error', code: 'TOO_LARGE' })
  t.ok(await until(() => filesUnder(home).length === 0, 3000), `nothing written (found: ${filesUnder(home).join(', ')})`)
  // Just under the limit is accepted.
  const ok = await call('POST', '/api/files/cat', { path: '/fits.bin' }, { body: randomBytes(MiB) })
  t.equal(ok.status, 200, 'exactly the limit is accepted')
})
