/**
 * @module test/front/tus.test
 * Resumable uploads (tus 1.0) over real HTTP against a real filegate, driven by the
 * tus project's own client, tus-js-client, and by plain fetch for the protocol's
 * edges: resume after a cut connection from another client, parallel uploads,
 * offsets, termination, expiry, restarts, rights and ownership, CORS.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { appendFile, readdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { Upload, type UploadOptions } from 'tus-js-client'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { ADMIN_PASSWORD, adminToken, createKey, createShare, expectError } from '../helpers/share.js'

const TUS = { 'tus-resumable': '1.0.0' }
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

/** Uploads `data` with tus-js-client; resolves with the upload URL once the server confirmed the last byte. */
function tusUpload(data: Buffer, options: UploadOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const upload: Upload = new Upload(data, {
      retryDelays: null,
      storeFingerprintForResuming: false,
      ...options,
      onSuccess: () => resolve(upload.url!),
      onError: reject,
    })
    upload.start()
  })
}

/**
 * Starts an upload and cuts it (as a dropped connection would) once the server has
 * confirmed `after` bytes and the next request is on its way: the client sends in
 * requests of `after` bytes, and is aborted when the first one is done, so the cut never
 * depends on how fast this machine is.
 */
function cutUpload(data: Buffer, after: number, options: UploadOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    let cut = false
    const upload: Upload = new Upload(data, {
      retryDelays: null,
      storeFingerprintForResuming: false,
      ...options,
      chunkSize: after,
      onChunkComplete: () => {
        if (cut) return
        cut = true
        void upload.abort().then(() => resolve(upload.url!), reject)
      },
      onSuccess: () => reject(new Error('the upload finished before it could be cut')),
      onError: reject,
    })
    upload.start()
  })
}

async function setup(t: Test, overrides: Record<string, unknown> = {}) {
  const srv = await startTestServer(t, overrides)
  const token = await tmpSession(srv.url, 'alice')
  const a = api(srv.url, token)
  const auth = { authorization: `Bearer ${token}` }
  const staged = () => readdir(join(srv.dataDir, 'tus'))
  return { ...srv, token, a, auth, staged }
}

async function cat(a: ReturnType<typeof api>, path: string): Promise<{ status: number; body: Buffer }> {
  const res = await a('GET', '/api/files/cat', { path })
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
}

/** Creates an upload with plain fetch; answers its absolute URL. */
async function create(url: string, headers: Record<string, string>, length: number, query = ''): Promise<string> {
  const res = await fetch(`${url}/api/files/tus${query}`, { method: 'POST', headers: { ...TUS, ...headers, 'upload-length': String(length) } })
  if (res.status !== 201) throw new Error(`creation answered ${res.status}: ${await res.text()}`)
  return new URL(res.headers.get('location')!, url).href
}

const patch = (at: string, headers: Record<string, string>, offset: number, body: string, type = 'application/offset+octet-stream') =>
  fetch(at, { method: 'PATCH', headers: { ...TUS, ...headers, 'upload-offset': String(offset), 'content-type': type }, body })

const head = (at: string, headers: Record<string, string>) => fetch(at, { method: 'HEAD', headers: { ...TUS, ...headers } })

/** Rewrites an upload's record in the state store (SQLite) with `change`. */
function withRecord(dataDir: string, at: string, change: (r: Record<string, unknown>) => Record<string, unknown>, created?: number): void {
  const id = at.split('/').pop()!
  const db = new Database(join(dataDir, 'state', 'state.db'))
  try {
    const row = db.prepare<[string], { upload: string; created_ms: number }>('SELECT upload, created_ms FROM tus_uploads WHERE id = ?').get(id)!
    db.prepare('UPDATE tus_uploads SET upload = ?, created_ms = ? WHERE id = ?').run(JSON.stringify(change(JSON.parse(row.upload) as Record<string, unknown>)), created ?? row.created_ms, id)
  } finally {
    db.close()
  }
}

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test('tus-js-client: a cut upload resumes from another client; the target appears only with the last byte', async (t) => {
  const { url, auth, a, staged, dataDir } = await setup(t)
  const data = randomBytes(48 * 1024 * 1024)
  const endpoint = `${url}/api/files/tus`
  const uploadUrl = await cutUpload(data, 4 * 1024 * 1024, { endpoint, headers: auth, metadata: { path: '/big/data.bin', filename: 'data.bin' } })
  t.match(uploadUrl, /\/api\/files\/tus\/[0-9a-f]{32}$/, 'the upload URL carries a 128-bit id')

  const h = await head(uploadUrl, auth)
  t.equal(h.status, 200)
  const offset = Number(h.headers.get('upload-offset'))
  t.ok(offset < data.length, `the cut upload holds part of the bytes (${offset} of ${data.length})`)
  t.equal(h.headers.get('upload-length'), String(data.length))
  t.equal(h.headers.get('cache-control'), 'no-store')
  t.equal(h.headers.get('upload-metadata'), `path ${Buffer.from('/big/data.bin').toString('base64')},filename ${Buffer.from('data.bin').toString('base64')}`, "HEAD shows the client's metadata, nothing of filegate's")
  t.equal((await cat(a, '/big/data.bin')).status, 404, 'no target before the last byte')
  t.equal((await stat(join(dataDir, 'tus'))).mode & 0o777, 0o700, 'the staging folder is private')
  t.same(await staged(), [uploadUrl.split('/').pop()], 'the bytes so far are staged (their record is in the state store)')

  let resumedFrom = -1
  const done = await tusUpload(data, {
    uploadUrl,
    headers: auth,
    onProgress: (sent) => {
      if (resumedFrom < 0) resumedFrom = sent
    },
  })
  t.equal(done, uploadUrl, 'the second client resumed the same upload')
  const got = await cat(a, '/big/data.bin')
  t.equal(got.status, 200)
  t.equal(got.body.length, data.length)
  t.equal(sha(got.body), sha(data), 'byte-exact')
  t.same(await staged(), [], 'nothing left in the staging folder')
  t.same(((await (await a('GET', '/api/files/ls', { path: '/big/' })).json()) as { results: { name: string }[] }).results.map((e) => e.name), ['data.bin'], 'no temporary file beside the target')
  t.equal((await head(uploadUrl, auth)).status, 404, 'a finished upload is gone')
})

t.test('parallel uploads, with and without data in the creation request', async (t) => {
  const { url, auth, a, staged } = await setup(t)
  const files = Array.from({ length: 6 }, (_, i) => ({ path: `/p/f${i}.bin`, data: randomBytes(1024 * 1024 + i * 333_333) }))
  await Promise.all(
    files.map((f, i) =>
      tusUpload(f.data, { endpoint: `${url}/api/files/tus?path=${encodeURIComponent(f.path)}`, headers: auth, chunkSize: 512 * 1024, uploadDataDuringCreation: i % 2 === 0 }),
    ),
  )
  for (const f of files) t.equal(sha((await cat(a, f.path)).body), sha(f.data), `${f.path} byte-exact`)
  t.same(await staged(), [])
})

t.test('the protocol: discovery, versions, offsets, media type, sizes, deferred length, empty uploads', async (t) => {
  const { url, auth, a } = await setup(t, { max_upload_bytes: 1000 })
  const opts = await fetch(`${url}/api/files/tus`, { method: 'OPTIONS' })
  t.equal(opts.status, 204)
  t.equal(opts.headers.get('tus-version'), '1.0.0')
  t.equal(opts.headers.get('tus-max-size'), '1000')
  t.same(opts.headers.get('tus-extension')!.split(',').sort(), ['creation', 'creation-defer-length', 'creation-with-upload', 'expiration', 'termination'])

  const v = await fetch(`${url}/api/files/tus?path=/x`, { method: 'POST', headers: { ...auth, 'tus-resumable': '0.2.2', 'upload-length': '3' } })
  t.equal(v.status, 412, 'an unsupported version')
  t.equal(v.headers.get('tus-version'), '1.0.0')
  t.equal((await fetch(`${url}/api/files/tus?path=/x`, { method: 'POST', headers: { ...auth, 'upload-length': '3' } })).status, 412, 'no version')

  const big = await fetch(`${url}/api/files/tus?path=/x`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '1001' } })
  t.equal(big.status, 413, 'Upload-Length over max_upload_bytes')

  const created = await fetch(`${url}/api/files/tus?path=/o.txt`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '6' } })
  t.equal(created.status, 201)
  t.ok(Date.parse(created.headers.get('upload-expires')!) > Date.now() + 23 * 3600_000, 'Upload-Expires: a day by default')
  const at = new URL(created.headers.get('location')!, url).href
  t.equal((await patch(at, auth, 0, 'abc')).status, 204)
  t.equal((await patch(at, auth, 0, 'abc')).status, 409, 'a stale offset')
  t.equal((await patch(at, auth, 5, 'c')).status, 409, 'an offset past the end')
  await expectError(t, await patch(at, auth, 3, 'def', 'text/plain'), 415, 'UNSUPPORTED_MEDIA', 'another media type')
  t.equal((await patch(at, auth, 3, 'defg')).status, 413, 'more bytes than Upload-Length')
  t.equal((await head(at, auth)).headers.get('upload-offset'), '3', 'refused requests changed nothing')
  t.equal((await cat(a, '/o.txt')).status, 404)
  const last = await patch(at, auth, 3, 'def')
  t.equal(last.status, 204)
  t.equal(last.headers.get('upload-offset'), '6')
  t.equal((await cat(a, '/o.txt')).body.toString(), 'abcdef')

  const deferred = await fetch(`${url}/api/files/tus?path=/d.txt`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-defer-length': '1' } })
  t.equal(deferred.status, 201)
  const dat = new URL(deferred.headers.get('location')!, url).href
  t.equal((await head(dat, auth)).headers.get('upload-defer-length'), '1')
  t.equal((await patch(dat, auth, 0, '12')).status, 204)
  t.equal((await patch(dat, { ...auth, 'upload-length': '4' }, 2, '34')).status, 204, 'the length declared with the last part')
  t.equal((await cat(a, '/d.txt')).body.toString(), '1234')
  const dmax = await fetch(`${url}/api/files/tus?path=/dm.txt`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-defer-length': '1' } })
  const dm = new URL(dmax.headers.get('location')!, url).href
  t.equal((await patch(dm, { ...auth, 'upload-length': '1001' }, 0, 'x')).status, 413, 'a declared length over max_upload_bytes')
  t.equal((await patch(dm, auth, 0, 'x'.repeat(1001))).status, 413, 'a deferred upload sent past max_upload_bytes')

  const empty = await fetch(`${url}/api/files/tus?path=/e.txt`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '0' } })
  t.equal(empty.status, 201)
  // (Listed rather than downloaded: a GET of an empty file gets no end from the uWS adapter today.)
  const listed = (await (await a('GET', '/api/files/ls', { path: '/' })).json()) as { results: { name: string; size: number }[] }
  t.same(listed.results.find((e) => e.name === 'e.txt')?.size, 0, 'an empty upload is complete at creation')

  await expectError(t, await fetch(`${url}/api/files/tus`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '1' } }), 400, 'INVALID_INPUT', 'no target path')
  await expectError(t, await fetch(`${url}/api/files/tus?path=/dir/`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '1' } }), 400, 'INVALID_INPUT', 'a folder as target')
  await expectError(t, await fetch(`${url}/api/files/tus?path=/../x`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '1' } }), 400, 'INVALID_INPUT', 'a path above the root')
  t.equal((await head(`${url}/api/files/tus/../../state/secret`, auth)).status, 404, 'an id of another shape')
  t.equal((await head(`${url}/api/files/tus/${'0'.repeat(32)}`, auth)).status, 404, 'an unknown upload')
  await expectError(t, await fetch(`${url}/api/files/tus?path=/n.txt`, { method: 'POST', headers: { ...TUS, 'upload-length': '1' } }), 401, 'NOT_AUTHENTICATED', 'no credential')
})

t.test('overwrite rules as for cat, checked at creation and again with the last byte', async (t) => {
  const { url, auth, a, staged } = await setup(t)
  await a('POST', '/api/files/cat', { path: '/exists.txt' }, { body: 'old' })
  const refused = await fetch(`${url}/api/files/tus?path=/exists.txt&overwrite=false`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '3' } })
  await expectError(t, refused, 409, 'CONFLICT', 'overwrite=false onto a file')
  t.equal(refused.headers.get('tus-resumable'), '1.0.0', 'errors name the protocol version too')

  await tusUpload(Buffer.from('new'), { endpoint: `${url}/api/files/tus?path=/exists.txt`, headers: auth })
  t.equal((await cat(a, '/exists.txt')).body.toString(), 'new', 'replaced by default, like cat')

  const at = await create(url, auth, 3, '?path=/later.txt&overwrite=false')
  await a('POST', '/api/files/cat', { path: '/later.txt' }, { body: 'first' })
  await expectError(t, await patch(at, auth, 0, 'abc'), 409, 'CONFLICT', 'the target appeared during the upload')
  t.equal((await cat(a, '/later.txt')).body.toString(), 'first', 'the file that appeared is kept')
  t.same(await staged(), [], 'an upload that can never be stored leaves nothing')
})

t.test('rights: share links as for cat; another credential cannot see or touch an upload', async (t) => {
  const { url, token, auth, a, staged } = await setup(t)
  await a('POST', '/api/files/mkdir', { path: '/in/' })
  await a('POST', '/api/files/cat', { path: '/in/old.txt' }, { body: 'old' })
  const reader = await createShare(url, token, { path: '/in/', can_read: true })
  const creation = await fetch(`${url}/api/files/tus?path=/x.txt&share=${reader.id}`, { method: 'POST', headers: { ...TUS, 'upload-length': '1' } })
  await expectError(t, creation, 403, 'FORBIDDEN', 'a read-only share')

  const uploader = await createShare(url, token, { path: '/in/', can_read: true, can_upload: true })
  const viaCat = await fetch(`${url}/api/files/cat?path=/old.txt&share=${uploader.id}`, { method: 'POST', body: 'x' })
  const viaTus = await fetch(`${url}/api/files/tus?path=/old.txt&share=${uploader.id}`, { method: 'POST', headers: { ...TUS, 'upload-length': '1' } })
  const [c, u] = [(await viaCat.json()) as object, (await viaTus.json()) as object]
  t.equal(viaTus.status, 403)
  t.same(u, c, 'replacing through a can_upload share: the same error as cat')

  const data = randomBytes(300_000)
  const done = await tusUpload(data, { endpoint: `${url}/api/files/tus?share=${uploader.id}`, metadata: { path: '/new.bin' }, chunkSize: 100_000 })
  t.match(done, new RegExp(`/api/files/tus/[0-9a-f]{32}\\?share=${uploader.id}$`), "the upload URL keeps the share's parameter")
  t.equal(sha((await cat(a, '/in/new.bin')).body), sha(data), 'stored under the shared folder')

  // Alice's upload, in progress: bob, another share and a missing credential see nothing.
  const at = await create(url, auth, 6, '?path=/mine.txt')
  t.equal((await patch(at, auth, 0, 'abc')).status, 204)
  const bob = { authorization: `Bearer ${await tmpSession(url, 'bob')}` }
  t.equal((await head(at, bob)).status, 404, 'HEAD by another user')
  await expectError(t, await patch(at, bob, 3, 'xyz'), 404, 'NOT_FOUND', 'PATCH by another user')
  await expectError(t, await fetch(at, { method: 'DELETE', headers: { ...TUS, ...bob } }), 404, 'NOT_FOUND', 'DELETE by another user')
  t.equal((await head(`${at}?share=${uploader.id}`, {})).status, 404, "HEAD through a share of the same user's storage")
  t.equal((await head(at, {})).status, 401, 'HEAD without a credential')
  t.equal((await head(at, auth)).headers.get('upload-offset'), '3', 'untouched')
  t.equal((await patch(at, auth, 3, 'def')).status, 204)
  t.equal((await cat(a, '/mine.txt')).body.toString(), 'abcdef')
  t.same(await staged(), [])
})

t.test('an API key with a share link: the upload URL keeps both; the key is checked on every request', async (t) => {
  const { url, token, a } = await setup(t, { admin_password: ADMIN_PASSWORD })
  await a('POST', '/api/files/mkdir', { path: '/drop/' })
  const share = await createShare(url, token, { path: '/drop/', can_read: false, can_upload: true })
  const admin = await adminToken(url)
  const key = await createKey(url, admin, 'uploader', ['https://app.example.com'])
  const data = randomBytes(200_000)
  const done = await tusUpload(data, { endpoint: `${url}/api/files/tus?key=${key.key}&share=${share.id}`, metadata: { path: '/k.bin' }, chunkSize: 64 * 1024 })
  const q = new URL(done).searchParams
  t.same([q.get('key'), q.get('share')], [key.key, share.id], 'the upload URL keeps the key and the share')
  t.equal(sha((await cat(a, '/drop/k.bin')).body), sha(data), 'stored in the shared folder')

  const at = await create(url, {}, 3, `?path=/k2.bin&key=${key.key}&share=${share.id}`)
  await expectError(t, await fetch(at, { method: 'PATCH', headers: { ...TUS, origin: 'https://evil.example', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'abc' }), 403, 'FORBIDDEN', 'from an origin the key does not list')
  t.equal((await fetch(`${url}/admin/api/keys/${key.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } })).status, 200)
  await expectError(t, await patch(at, {}, 0, 'abc'), 401, 'NOT_AUTHENTICATED', 'after the key is revoked')
})

t.test('termination leaves nothing', async (t) => {
  const { url, auth, a, staged } = await setup(t)
  const uploadUrl = await cutUpload(randomBytes(32 * 1024 * 1024), 1024 * 1024, { endpoint: `${url}/api/files/tus?path=/t.bin`, headers: auth })
  t.equal((await staged()).length, 1, 'staged: the bytes')
  await Upload.terminate(uploadUrl, { headers: auth, retryDelays: null })
  t.same(await staged(), [], 'the staging folder is empty')
  t.equal((await head(uploadUrl, auth)).status, 404, 'HEAD after termination')
  t.equal((await cat(a, '/t.bin')).status, 404, 'no target')
})

t.test('an expired upload leaves nothing (tus.expiry_seconds)', async (t) => {
  const { url, auth, a, staged } = await setup(t, { tus: { expiry_seconds: 1 } })
  const created = await fetch(`${url}/api/files/tus?path=/x.txt`, { method: 'POST', headers: { ...TUS, ...auth, 'upload-length': '6' } })
  const at = new URL(created.headers.get('location')!, url).href
  t.ok(Date.parse(created.headers.get('upload-expires')!) <= Date.now() + 2000, 'Upload-Expires: a second later')
  t.equal((await patch(at, auth, 0, 'abc')).status, 204)
  await until('the sweep', async () => (await staged()).length === 0)
  t.ok([404, 410].includes((await head(at, auth)).status), 'gone')
  t.equal((await patch(at, auth, 3, 'def')).status >= 400, true, 'cannot be finished')
  t.equal((await cat(a, '/x.txt')).status, 404, 'no target')
})

t.test('an upload found expired on access answers 410 and is removed', async (t) => {
  const { url, auth, dataDir, staged } = await setup(t)
  const at = await create(url, auth, 6, '?path=/late.txt')
  t.equal((await patch(at, auth, 0, 'abc')).status, 204)
  // A day passes (the record's creation time is moved back; the sweep runs every 10 minutes).
  const back = Date.now() - 86_401_000
  withRecord(dataDir, at, (r) => ({ ...r, creation_date: new Date(back).toISOString() }), back)
  t.equal((await head(at, auth)).status, 410, 'expired')
  t.same(await staged(), [], 'and removed')
  t.equal((await head(at, auth)).status, 404, 'then unknown')
})

t.test('an upload whose last byte was staged but not stored (filegate stopped between) is stored by the next HEAD', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { data_dir: dataDir })
  const token = await tmpSession(first.url, 'alice')
  const auth = { authorization: `Bearer ${token}` }
  const at = await create(first.url, auth, 6, '?path=/crash.txt')
  t.equal((await patch(at, auth, 0, 'abc')).status, 204)
  await first.app.close(0)
  await appendFile(join(dataDir, 'tus', at.split('/').pop()!), 'def') // the last bytes, staged just before the stop

  const second = await startTestServer(t, { data_dir: dataDir })
  const h = await head(`${second.url}${new URL(at).pathname}`, auth)
  t.equal(h.status, 200)
  t.equal(h.headers.get('upload-offset'), '6', 'complete')
  t.equal((await cat(api(second.url, token), '/crash.txt')).body.toString(), 'abcdef', 'and stored before the answer')
  t.same(await readdir(join(dataDir, 'tus')), [])
})

t.test('staged uploads survive a restart and resume on the new process', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { data_dir: dataDir })
  const token = await tmpSession(first.url, 'alice')
  const auth = { authorization: `Bearer ${token}` }
  const data = randomBytes(32 * 1024 * 1024)
  const uploadUrl = await cutUpload(data, 2 * 1024 * 1024, { endpoint: `${first.url}/api/files/tus?path=/r.bin`, headers: auth })
  const path = new URL(uploadUrl).pathname
  await first.app.close(0)

  const second = await startTestServer(t, { data_dir: dataDir })
  await tusUpload(data, { uploadUrl: `${second.url}${path}`, headers: auth })
  t.equal(sha((await cat(api(second.url, token), '/r.bin')).body), sha(data), 'byte-exact after the restart')
})

t.test('nodes sharing the store and staging_dir: an upload started at one is resumed and finished at another', async (t) => {
  const dataDir = t.testdir()
  const shared = join(t.testdir(), 'shared-staging')
  const a = await startTestServer(t, { data_dir: dataDir, staging_dir: shared })
  const b = await startTestServer(t, { data_dir: dataDir, staging_dir: shared })
  const token = await tmpSession(a.url, 'alice')
  const auth = { authorization: `Bearer ${token}` }
  const at = await create(a.url, auth, 6, '?path=/moved.txt')
  const id = at.split('/').pop()!
  t.equal((await patch(at, auth, 0, 'abc')).status, 204, 'first half at node a')
  t.same(await readdir(join(shared, 'tus')), [id], 'the bytes are in the shared staging folder')
  t.notOk(existsSync(join(dataDir, 'tus')), 'nothing staged in the data directory')
  const atB = `${b.url}${new URL(at).pathname}`
  const h = await head(atB, auth)
  t.equal(h.headers.get('upload-offset'), '3', 'node b knows the upload and its offset')
  t.equal((await patch(atB, auth, 3, 'def')).status, 204, 'second half at node b')
  t.equal((await cat(api(a.url, token), '/moved.txt')).body.toString(), 'abcdef', 'the target is whole, seen from node a')
  t.same(await readdir(join(shared, 'tus')), [], 'nothing left')
  t.equal((await head(at, auth)).status, 404, 'node a knows it is finished')
})

t.test('a record an earlier version kept beside the bytes (<id>.json) moves into the store: the upload resumes', async (t) => {
  const dataDir = t.testdir()
  const first = await startTestServer(t, { data_dir: dataDir })
  const token = await tmpSession(first.url, 'alice')
  const auth = { authorization: `Bearer ${token}` }
  const at = await create(first.url, auth, 6, '?path=/old.txt')
  t.equal((await patch(at, auth, 0, 'abc')).status, 204)
  await first.app.close(0)
  // As @tus/file-store's own configstore kept it: JSON in <id>.json, nothing in the store.
  const id = at.split('/').pop()!
  const db = new Database(join(dataDir, 'state', 'state.db'))
  const row = db.prepare<[string], { upload: string }>('SELECT upload FROM tus_uploads WHERE id = ?').get(id)!
  db.prepare('DELETE FROM tus_uploads WHERE id = ?').run(id)
  db.close()
  await writeFile(join(dataDir, 'tus', `${id}.json`), row.upload)

  const second = await startTestServer(t, { data_dir: dataDir })
  const atNow = `${second.url}${new URL(at).pathname}`
  t.equal((await head(atNow, auth)).headers.get('upload-offset'), '3', 'known again, with its offset')
  t.equal((await patch(atNow, auth, 3, 'def')).status, 204)
  t.equal((await cat(api(second.url, token), '/old.txt')).body.toString(), 'abcdef')
  t.same(await readdir(join(dataDir, 'tus')), [], 'the old record file is gone too')
})

t.test('CORS: preflight allows the tus headers and PATCH; answers expose them', async (t) => {
  const origin = 'https://app.example.com'
  const { url, auth } = await setup(t, { cors: { origins: [origin] } })
  const pre = await fetch(`${url}/api/files/tus`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'tus-resumable,upload-length,upload-metadata' },
  })
  t.equal(pre.status, 204)
  t.equal(pre.headers.get('access-control-allow-origin'), origin)
  t.match(pre.headers.get('access-control-allow-methods'), /PATCH/)
  for (const h of ['Tus-Resumable', 'Upload-Length', 'Upload-Offset', 'Upload-Metadata']) t.match(pre.headers.get('access-control-allow-headers'), h)
  t.equal(pre.headers.get('tus-version'), '1.0.0')
  const created = await fetch(`${url}/api/files/tus?path=/c.txt`, { method: 'POST', headers: { ...TUS, ...auth, origin, 'upload-length': '1' } })
  t.equal(created.headers.get('access-control-allow-origin'), origin)
  for (const h of ['Location', 'Upload-Offset', 'Upload-Length', 'Tus-Resumable', 'Upload-Expires']) t.match(created.headers.get('access-control-expose-headers'), h)
  const other = await fetch(`${url}/api/files/tus?path=/c2.txt`, { method: 'POST', headers: { ...TUS, ...auth, origin: 'https://evil.example', 'upload-length': '1' } })
  t.equal(other.headers.get('access-control-allow-origin'), null, 'no CORS headers for another origin')
})
