/**
 * @module test/gateways/s3/multipart.test
 * S3 multipart uploads (gateways/s3/multipart/) through their HTTP handler, over a real
 * view of a local folder (worker pool, local driver) and the real SQLite state store:
 * the whole flow with ETags checked against independently computed MD5s, metadata kept,
 * atomic Complete, the part list's checks, other users' uploads, hostile ids and part
 * numbers, abort during a part upload, crash debris and expiry swept.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { XMLParser } from 'fast-xml-parser'
import t, { type Test } from 'tap'
import type { HttpReply, HttpRequest } from '../../../core/http.js'
import type { S3Request } from '../../../gateways/s3/request.js'
import type { View } from '../../../core/view.js'
import { openView } from '../../../gateways/connection/view.js'
import { openSqliteState } from '../../../front/state/sqlite-state.js'
import { S3Error } from '../../../gateways/s3/errors.js'
import { ObjectMeta } from '../../../gateways/s3/meta/index.js'
import { MultipartUploads, multipartRoute } from '../../../gateways/s3/multipart/index.js'
import { PART_IDLE_MS } from '../../../gateways/s3/multipart/uploads.js'
import { PoolStaged } from '../../../workers/client.js'
import { WorkerPool } from '../../../workers/pool.js'
import { startS3rver } from '../../servers/s3rver.js'
import { FULL_ACCESS, READ_ONLY } from '../../../core/permissions.js'

const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())
/** The parts' staging area: written by the pool's thread, as the server does. */
const staging = (dir: string) => new PoolStaged(pool).area(dir)

const MiB = 1024 * 1024
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')
const md5OfMd5s = (parts: Uint8Array[]) => `${createHash('md5').update(Buffer.concat(parts.map((p) => createHash('md5').update(p).digest()))).digest('hex')}-${parts.length}`
const xml = new XMLParser({ parseTagValue: false, isArray: (name) => ['Part', 'Upload', 'CommonPrefixes'].includes(name) })

interface Req {
  readonly method: string
  readonly query?: string
  readonly headers?: Record<string, string>
  readonly body?: AsyncIterable<Uint8Array> | Uint8Array | string
  readonly signal?: AbortSignal
}

async function* once(b: Uint8Array): AsyncIterable<Uint8Array> {
  yield b
}

async function fixture(t: Test, opts: { expiryMs?: number } = {}) {
  const base = t.testdir({ root: { bucket: {}, other: { 'src.bin': '' } } })
  const root = join(base, 'root')
  const state = await openSqliteState(join(base, 'state'))
  t.teardown(() => state.close())
  const stagingDir = join(base, 'mp')
  const meta = new ObjectMeta(state)
  const uploads = new MultipartUploads({ state, staging: staging(stagingDir), meta, expiryMs: opts.expiryMs ?? 24 * 3_600_000 })
  await uploads.start()
  t.teardown(() => uploads.stop())
  const views: View[] = []
  const view = async (readOnly = false) => {
    const fs = await openView({ pool, spec: { type: 'local', root }, permissions: readOnly ? READ_ONLY : FULL_ACCESS, stagingDir: join(base, 'gw-staging') })
    views.push(fs)
    return fs
  }
  t.teardown(() => views.forEach((v) => v.close()))
  const alice = { user: 'alice', fs: await view() }
  const bob = { user: 'bob', fs: await view() }
  const reader = { user: 'alice', fs: await view(true) }
  /** One request through the handler, as the gateway's router hands it over. */
  const call = async (who: { user: string; fs: View }, bucket: string, key: string, r: Req): Promise<HttpReply | undefined> => {
    const headers = new Map(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]))
    const raw = r.body ?? new Uint8Array(0)
    const body = typeof raw === 'string' ? once(Buffer.from(raw)) : raw instanceof Uint8Array ? once(raw) : raw
    const length = typeof raw === 'string' ? Buffer.byteLength(raw) : raw instanceof Uint8Array ? raw.byteLength : null
    const req: HttpRequest = {
      method: r.method,
      path: `/${bucket}/${key}`,
      query: new URLSearchParams(r.query ?? ''),
      header: (n) => headers.get(n),
      headers: () => headers.entries(),
      remoteAddress: '127.0.0.1',
      requestId: 'mp-test',
      signal: r.signal ?? new AbortController().signal,
      contentLength: length,
      body,
    }
    const s3r: S3Request = { req, caller: { accessKeyId: `key-of-${who.user}`, ...who, body, payload: () => ({ body, sha256: null }), contentLength: length }, ctx: { requestId: req.requestId, signal: req.signal }, meta, region: 'us-east-1', bucket, key }
    // Complete: a keep-alive space every millisecond while it writes. Bodies read whole here.
    const reply = await multipartRoute(uploads, s3r, { keepAliveMs: 1 })
    if (!reply || reply.body === undefined || typeof reply.body === 'string' || reply.body instanceof Uint8Array) return reply
    const chunks: Buffer[] = []
    for await (const c of reply.body) chunks.push(Buffer.from(c))
    return { ...reply, body: Buffer.concat(chunks).toString('utf8') }
  }
  const doc = (reply: HttpReply | undefined): Record<string, any> => {
    if (!reply || typeof reply.body !== 'string') throw new Error('no XML reply')
    const parsed = xml.parse(reply.body)
    if (parsed.Error) throw new S3Error(parsed.Error.Code, parsed.Error.Message, reply.status) // an error in a 200 (Complete)
    return parsed
  }
  const create = async (who = alice, key = 'big.bin', headers: Record<string, string> = {}) =>
    doc(await call(who, 'bucket', key, { method: 'POST', query: 'uploads', headers })).InitiateMultipartUploadResult.UploadId as string
  const part = async (who: typeof alice, key: string, id: string, n: number | string, data: Uint8Array | AsyncIterable<Uint8Array>, headers: Record<string, string> = {}) =>
    (await call(who, 'bucket', key, { method: 'PUT', query: `partNumber=${n}&uploadId=${id}`, body: data, headers }))!.headers!.etag!
  const completeXml = (parts: { n: number; etag: string }[]) =>
    `<CompleteMultipartUpload>${parts.map((p) => `<Part><PartNumber>${p.n}</PartNumber><ETag>${p.etag}</ETag></Part>`).join('')}</CompleteMultipartUpload>`
  const complete = async (who: typeof alice, key: string, id: string, parts: { n: number; etag: string }[]) =>
    doc(await call(who, 'bucket', key, { method: 'POST', query: `uploadId=${id}`, body: completeXml(parts) })).CompleteMultipartUploadResult
  return { root, state, stagingDir, meta, uploads, alice, bob, reader, call, doc, create, part, complete, completeXml }
}

/** The S3 error code a promise rejects with. */
async function s3code(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (err) {
    if (err instanceof S3Error) return err.code
    throw err
  }
  return 'no error'
}

t.test('create, parts, list, complete: the object appears whole with the md5-of-md5s ETag and its metadata; staging goes', async (t) => {
  const f = await fixture(t)
  const id = await f.create(f.alice, 'dir/sub/big.bin', { 'content-type': 'application/x-test', 'x-amz-meta-colour': 'green' })
  t.match(id, /^[0-9a-f]{32}$/, 'a random upload id')
  const data = [randomBytes(5 * MiB), randomBytes(5 * MiB + 3), randomBytes(1000)]
  const etags: string[] = []
  for (const [i, d] of data.entries()) etags.push(await f.part(f.alice, 'dir/sub/big.bin', id, i + 1, d))
  t.same(etags, data.map((d) => `"${md5(d)}"`), "each part's ETag is its MD5")
  const staged = readdirSync(join(f.stagingDir, id))
  t.equal(staged.length, 3, 'three part files staged')
  for (const name of staged) t.equal(statSync(join(f.stagingDir, id, name)).mode & 0o777, 0o600, 'part files are private')
  t.equal(statSync(join(f.stagingDir, id)).mode & 0o777, 0o700, 'the upload folder is private')
  t.notOk(existsSync(join(f.root, 'bucket/dir/sub/big.bin')), 'nothing at the key before Complete')

  const listed = f.doc(await f.call(f.alice, 'bucket', 'dir/sub/big.bin', { method: 'GET', query: `uploadId=${id}&max-parts=2` })).ListPartsResult
  t.same(listed.Part.map((p: any) => [p.PartNumber, p.ETag, p.Size]), [['1', etags[0], String(5 * MiB)], ['2', etags[1], String(5 * MiB + 3)]])
  t.equal(listed.IsTruncated, 'true')
  const rest = f.doc(await f.call(f.alice, 'bucket', 'dir/sub/big.bin', { method: 'GET', query: `uploadId=${id}&part-number-marker=${listed.NextPartNumberMarker}` })).ListPartsResult
  t.same(rest.Part.map((p: any) => p.PartNumber), ['3'])
  t.equal(rest.IsTruncated, 'false')

  const uploadsXml = f.doc(await f.call(f.alice, 'bucket', '', { method: 'GET', query: 'uploads' })).ListMultipartUploadsResult
  t.same(uploadsXml.Upload.map((u: any) => [u.Key, u.UploadId]), [['dir/sub/big.bin', id]])

  const done = await f.complete(f.alice, 'dir/sub/big.bin', id, data.map((_, i) => ({ n: i + 1, etag: etags[i]! })))
  t.equal(done.ETag, `"${md5OfMd5s(data)}"`, 'ETag: md5 of the part MD5s, -3 (computed independently)')
  t.equal(done.Key, 'dir/sub/big.bin')
  const onDisk = readFileSync(join(f.root, 'bucket/dir/sub/big.bin'))
  t.equal(md5(onDisk), md5(Buffer.concat(data)), 'the object is the parts in order')
  t.notOk(existsSync(join(f.stagingDir, id)), 'the staging folder is gone')
  const got = await f.meta.get(f.alice.fs, '/bucket/dir/sub/big.bin', await f.alice.fs.stat({ requestId: 'x', signal: new AbortController().signal }, '/bucket/dir/sub/big.bin'))
  t.same(got, { etag: md5OfMd5s(data), contentType: 'application/x-test', userMeta: { colour: 'green' } }, 'ETag, Content-Type and metadata kept')

  const again = await f.complete(f.alice, 'dir/sub/big.bin', id, data.map((_, i) => ({ n: i + 1, etag: etags[i]! })))
  t.equal(again.ETag, done.ETag, 'a repeated Complete answers the same')
  t.equal(await s3code(f.part(f.alice, 'dir/sub/big.bin', id, 1, randomBytes(10))), 'NoSuchUpload', 'no part after Complete')
  t.equal(await s3code(f.call(f.alice, 'bucket', 'dir/sub/big.bin', { method: 'DELETE', query: `uploadId=${id}` })), 'NoSuchUpload', 'no abort after Complete')
  t.same(f.doc(await f.call(f.alice, 'bucket', '', { method: 'GET', query: 'uploads' })).ListMultipartUploadsResult.Upload ?? [], [], 'no longer listed')
})

t.test('a part sent again replaces the previous one; the last part may be small, the others not', async (t) => {
  const f = await fixture(t)
  const id = await f.create()
  const first = randomBytes(5 * MiB)
  await f.part(f.alice, 'big.bin', id, 1, randomBytes(5 * MiB))
  const e1 = await f.part(f.alice, 'big.bin', id, 1, first)
  t.equal(readdirSync(join(f.stagingDir, id)).length, 1, 'the replaced part file is gone')
  const small = randomBytes(10)
  const e2 = await f.part(f.alice, 'big.bin', id, 2, small)
  const e3 = await f.part(f.alice, 'big.bin', id, 3, Buffer.from('end'))
  t.equal(await s3code(f.complete(f.alice, 'big.bin', id, [{ n: 1, etag: e1 }, { n: 2, etag: e2 }, { n: 3, etag: e3 }])), 'EntityTooSmall', 'a small part before the last: EntityTooSmall')
  t.notOk(existsSync(join(f.root, 'bucket/big.bin')), 'nothing created')
  t.equal(await s3code(f.complete(f.alice, 'big.bin', id, [{ n: 2, etag: e2 }, { n: 1, etag: e1 }])), 'InvalidPartOrder')
  t.equal(await s3code(f.complete(f.alice, 'big.bin', id, [{ n: 1, etag: e1 }, { n: 4, etag: e3 }])), 'InvalidPart', 'a part never sent')
  t.equal(await s3code(f.complete(f.alice, 'big.bin', id, [{ n: 1, etag: `"${md5(Buffer.from('x'))}"` }])), 'InvalidPart', 'a wrong ETag')
  t.equal(await s3code(f.call(f.alice, 'bucket', 'big.bin', { method: 'POST', query: `uploadId=${id}`, body: '<CompleteMultipartUpload><Part>' })), 'MalformedXML')
  t.equal(await s3code(f.call(f.alice, 'bucket', 'big.bin', { method: 'POST', query: `uploadId=${id}`, body: '<CompleteMultipartUpload></CompleteMultipartUpload>' })), 'MalformedXML', 'no parts')
  t.notOk(existsSync(join(f.root, 'bucket/big.bin')), 'still nothing created')
  const done = await f.complete(f.alice, 'big.bin', id, [{ n: 1, etag: e1 }, { n: 2, etag: e2 }])
  t.equal(done.ETag, `"${md5OfMd5s([first, small])}"`, 'parts 1 and 2 (part 3 left out)')
  t.equal(md5(readFileSync(join(f.root, 'bucket/big.bin'))), md5(Buffer.concat([first, small])))
  t.notOk(existsSync(join(f.stagingDir, id)), 'the unused part went with the staging')
})

t.test('hostile: other users, unknown and malformed ids, part numbers out of range, read-only keys, bad keys', async (t) => {
  const f = await fixture(t)
  const id = await f.create()
  await f.part(f.alice, 'big.bin', id, 1, Buffer.from('mine'))
  t.equal(await s3code(f.part(f.bob, 'big.bin', id, 1, Buffer.from('yours'))), 'NoSuchUpload', "another user's upload: not told apart from none")
  t.equal(await s3code(f.call(f.bob, 'bucket', 'big.bin', { method: 'GET', query: `uploadId=${id}` })), 'NoSuchUpload')
  t.equal(await s3code(f.call(f.bob, 'bucket', 'big.bin', { method: 'DELETE', query: `uploadId=${id}` })), 'NoSuchUpload')
  t.equal(await s3code(f.complete(f.bob, 'big.bin', id, [{ n: 1, etag: `"${md5(Buffer.from('mine'))}"` }])), 'NoSuchUpload')
  t.same(f.doc(await f.call(f.bob, 'bucket', '', { method: 'GET', query: 'uploads' })).ListMultipartUploadsResult.Upload ?? [], [], "bob does not see alice's uploads")
  t.equal(await s3code(f.part(f.alice, 'other.bin', id, 1, Buffer.from('x'))), 'NoSuchUpload', 'the id with another key')
  for (const bad of ['0123456789abcdef0123456789abcdef', '../../etc', '..%2F..', '', 'A'.repeat(32)]) {
    t.equal(await s3code(f.part(f.alice, 'big.bin', bad, 1, Buffer.from('x'))), 'NoSuchUpload', `upload id ${JSON.stringify(bad)}`)
  }
  for (const n of ['0', '10001', '-1', 'abc', '1.5', '99999999999']) {
    t.equal(await s3code(f.part(f.alice, 'big.bin', id, n, Buffer.from('x'))), 'InvalidArgument', `part number ${n}`)
  }
  await f.part(f.alice, 'big.bin', id, 10000, Buffer.from('the last part number'))
  t.equal(await s3code(f.create(f.reader)), 'AccessDenied', 'a read-only key cannot create')
  t.equal(await s3code(f.part(f.reader, 'big.bin', id, 2, Buffer.from('x'))), 'AccessDenied', '…nor upload a part')
  t.equal(await s3code(f.call(f.reader, 'bucket', 'big.bin', { method: 'DELETE', query: `uploadId=${id}` })), 'AccessDenied', '…nor abort')
  for (const key of ['../escape.bin', 'a/../../x', 'a//b', 'dir/', './x', '.filegate-abc.part', 'ctl\u0001']) {
    t.equal(await s3code(f.create(f.alice, key)), 'InvalidArgument', `key ${JSON.stringify(key)} refused`)
  }
  t.equal(await s3code(f.call(f.alice, 'nobucket', 'x', { method: 'POST', query: 'uploads' })), 'NoSuchBucket')
  t.same(readdirSync(join(f.root, 'bucket')), [], 'nothing written by any of it')
  t.same(readdirSync(f.stagingDir), [id], 'only the one real upload is staged')
})

t.test('a body that fails at its end (bad signature, Content-MD5) records nothing', async (t) => {
  const f = await fixture(t)
  const id = await f.create()
  const ok = await f.part(f.alice, 'big.bin', id, 2, Buffer.from('data'))
  t.equal(ok, `"${md5(Buffer.from('data'))}"`)
  async function* tampered(): AsyncIterable<Uint8Array> {
    yield randomBytes(64 * 1024)
    throw new S3Error('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.', 403)
  }
  t.equal(await s3code(f.part(f.alice, 'big.bin', id, 3, tampered())), 'SignatureDoesNotMatch')
  const parts = f.doc(await f.call(f.alice, 'bucket', 'big.bin', { method: 'GET', query: `uploadId=${id}` })).ListPartsResult.Part
  t.same(parts.map((p: any) => p.PartNumber), ['2'], 'only the good part is recorded')
  t.equal(readdirSync(join(f.stagingDir, id)).length, 1, 'and only its file is staged')
})

t.test('abort, also while a part is streaming in: the parts go, NoSuchUpload after, nothing left', async (t) => {
  const f = await fixture(t)
  const id = await f.create()
  await f.part(f.alice, 'big.bin', id, 1, randomBytes(MiB))
  let release!: () => void
  const gate = new Promise<void>((r) => (release = r))
  let sent = 0
  async function* slow(): AsyncIterable<Uint8Array> {
    yield randomBytes(MiB)
    sent++
    await gate
    yield randomBytes(MiB)
  }
  const inFlight = f.part(f.alice, 'big.bin', id, 2, slow())
  while (sent === 0) await new Promise((r) => setTimeout(r, 5))
  const aborted = await f.call(f.alice, 'bucket', 'big.bin', { method: 'DELETE', query: `uploadId=${id}` })
  t.equal(aborted?.status, 204)
  release()
  t.equal(await s3code(inFlight), 'NoSuchUpload', 'the part in flight ends with NoSuchUpload')
  t.notOk(existsSync(join(f.stagingDir, id)), 'no staging left')
  t.same(await f.state.listMultipartParts(id), [], 'no part records left')
  t.equal(await f.state.getMultipartUpload(id), null, 'no upload record left')
  t.equal(await s3code(f.part(f.alice, 'big.bin', id, 3, Buffer.from('x'))), 'NoSuchUpload')
  t.equal(await s3code(f.call(f.alice, 'bucket', 'big.bin', { method: 'GET', query: `uploadId=${id}` })), 'NoSuchUpload')
  t.notOk(existsSync(join(f.root, 'bucket/big.bin')))
})

t.test('UploadPartCopy: a range of an object the caller can read; errors for missing sources and bad ranges', async (t) => {
  const f = await fixture(t)
  const src = randomBytes(6 * MiB + 11)
  writeFileSync(join(f.root, 'other/src.bin'), src)
  const id = await f.create(f.alice, 'copied.bin')
  const copy = async (n: number, headers: Record<string, string>) => f.doc(await f.call(f.alice, 'bucket', 'copied.bin', { method: 'PUT', query: `partNumber=${n}&uploadId=${id}`, headers })).CopyPartResult
  const c1 = await copy(1, { 'x-amz-copy-source': '/other/src.bin', 'x-amz-copy-source-range': `bytes=0-${5 * MiB - 1}` })
  t.equal(c1.ETag, `"${md5(src.subarray(0, 5 * MiB))}"`, 'the range copied, MD5 computed independently')
  const c2 = await copy(2, { 'x-amz-copy-source': 'other/src%2Ebin', 'x-amz-copy-source-range': `bytes=${5 * MiB}-${src.length - 1}` })
  t.equal(c2.ETag, `"${md5(src.subarray(5 * MiB))}"`)
  const done = await f.complete(f.alice, 'copied.bin', id, [{ n: 1, etag: c1.ETag }, { n: 2, etag: c2.ETag }])
  t.equal(md5(readFileSync(join(f.root, 'bucket/copied.bin'))), md5(src), 'the copy is the source')
  t.equal(done.ETag, `"${md5OfMd5s([src.subarray(0, 5 * MiB), src.subarray(5 * MiB)])}"`)
  const id2 = await f.create(f.alice, 'x.bin')
  const err = (headers: Record<string, string>) => s3code(f.call(f.alice, 'bucket', 'x.bin', { method: 'PUT', query: `partNumber=1&uploadId=${id2}`, headers }))
  t.equal(await err({ 'x-amz-copy-source': '/other/missing.bin' }), 'NoSuchKey')
  t.equal(await err({ 'x-amz-copy-source': '/other' }), 'InvalidArgument', 'a bucket alone')
  t.equal(await err({ 'x-amz-copy-source': '/other/src.bin', 'x-amz-copy-source-range': `bytes=0-${src.length}` }), 'InvalidRange', 'past the end')
  t.equal(await err({ 'x-amz-copy-source': '/other/src.bin', 'x-amz-copy-source-range': 'bytes=5-' }), 'InvalidArgument', 'open range')
  t.equal(await err({ 'x-amz-copy-source': '/bucket/../../etc/passwd' }), 'InvalidArgument', 'never resolved outside')
})

t.test('ListMultipartUploads: prefix, delimiter, max-uploads and markers page through every upload once', async (t) => {
  const f = await fixture(t)
  const keys = ['a/1', 'a/2', 'b', 'c/x/1', 'c/y', 'd', 'd']
  const ids: string[] = []
  for (const k of keys) ids.push(await f.create(f.alice, k))
  const list = async (query: string) => f.doc(await f.call(f.alice, 'bucket', '', { method: 'GET', query: `uploads&${query}` })).ListMultipartUploadsResult
  const grouped = await list('delimiter=/')
  t.same(grouped.Upload.map((u: any) => u.Key), ['b', 'd', 'd'])
  t.same(grouped.CommonPrefixes.map((p: any) => p.Prefix), ['a/', 'c/'])
  const under = await list('prefix=c/&delimiter=/')
  t.same(under.Upload.map((u: any) => u.Key), ['c/y'])
  t.same(under.CommonPrefixes.map((p: any) => p.Prefix), ['c/x/'])
  // Page by two, with and without delimiter: every upload (or prefix) once, in order.
  for (const delim of ['', '/']) {
    const seen: string[] = []
    let markers = ''
    for (let i = 0; i < 10; i++) {
      const page = await list(`max-uploads=2${delim ? `&delimiter=${delim}` : ''}${markers}`)
      for (const u of page.Upload ?? []) seen.push(`${u.Key}#${u.UploadId}`)
      for (const p of page.CommonPrefixes ?? []) seen.push(p.Prefix)
      if (page.IsTruncated !== 'true') break
      markers = `&key-marker=${encodeURIComponent(page.NextKeyMarker)}&upload-id-marker=${page.NextUploadIdMarker}`
    }
    const expected = delim === '' ? keys.map((k, i) => `${k}#${ids[i]}`) : ['a/', `b#${ids[2]}`, 'c/', `d#${ids[5]}`, `d#${ids[6]}`]
    t.same([...seen].sort(), [...expected].sort(), `paging ${delim ? 'with' : 'without'} delimiter: each once`)
    t.equal(seen.length, expected.length)
  }
  t.equal(await s3code(list('max-uploads=x')), 'InvalidArgument')
})

t.test('expiry and crash debris: swept at start and periodically, nothing left', async (t) => {
  const f = await fixture(t, { expiryMs: 24 * 3_600_000 })
  const kept = await f.create()
  await f.part(f.alice, 'big.bin', kept, 1, Buffer.from('kept'))
  // A crash: an upload folder no record owns, a part file no record names, a stray file.
  mkdirSync(join(f.stagingDir, 'ffffffffffffffffffffffffffffffff'))
  writeFileSync(join(f.stagingDir, 'ffffffffffffffffffffffffffffffff', '00001.0000'), 'orphan')
  writeFileSync(join(f.stagingDir, kept, '00002.deadbeef'), 'cut off by a crash')
  const anHourAgo = new Date(Date.now() - PART_IDLE_MS - 1000)
  utimesSync(join(f.stagingDir, kept, '00002.deadbeef'), anHourAgo, anHourAgo)
  writeFileSync(join(f.stagingDir, kept, '00003.cafe'), 'being written at another node')
  writeFileSync(join(f.stagingDir, 'junk'), 'junk')
  const restarted = new MultipartUploads({ state: f.state, staging: staging(f.stagingDir), meta: f.meta, expiryMs: 24 * 3_600_000 })
  await restarted.start()
  restarted.stop()
  t.same(readdirSync(f.stagingDir), [kept], 'only the live upload remains')
  t.equal(readdirSync(join(f.stagingDir, kept)).length, 2, 'with its recorded part and the part still being written (no record yet, growing), not the one cut off an hour ago')
  t.notOk(existsSync(join(f.stagingDir, kept, '00002.deadbeef')))
  t.same((await f.state.listMultipartParts(kept)).map((p) => p.number), [1])

  // Expired: an upload older than the expiry goes, records and staging.
  const soon = new MultipartUploads({ state: f.state, staging: staging(f.stagingDir), meta: f.meta, expiryMs: 200 })
  const old = await f.create()
  await f.part(f.alice, 'big.bin', old, 1, randomBytes(1000))
  await soon.start() // sweeps every 1 s at this expiry
  t.teardown(() => soon.stop())
  const deadline = Date.now() + 30_000
  while ((existsSync(join(f.stagingDir, old)) || existsSync(join(f.stagingDir, kept))) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  t.same(readdirSync(f.stagingDir), [], 'every expired upload swept: no staging left')
  t.equal(await f.state.getMultipartUpload(old), null, 'no record left')
  t.same(await f.state.listMultipartParts(old), [])
  t.equal(await s3code(f.part(f.alice, 'big.bin', old, 2, Buffer.from('late'))), 'NoSuchUpload')
})

t.test('over an S3 backend: Complete writes the object with its Content-Type and metadata on the object itself', async (t) => {
  const s3 = await startS3rver(t)
  const base = t.testdir()
  const state = await openSqliteState(join(base, 'state'))
  t.teardown(() => state.close())
  const meta = new ObjectMeta(state)
  const uploads = new MultipartUploads({ state, staging: staging(join(base, 'mp')), meta, expiryMs: 3_600_000 })
  t.teardown(() => uploads.stop())
  const spec = { type: 's3' as const, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, root: '' }
  const fs = await openView({ pool, spec, permissions: FULL_ACCESS, stagingDir: join(base, 'gw') })
  t.teardown(() => fs.close())
  const bucket = await s3.bucket()
  const c = { requestId: 'mp-s3', signal: new AbortController().signal }
  const request = (body: Uint8Array): S3Request => ({
    req: {} as HttpRequest, // not read by these calls
    caller: { accessKeyId: 'k', user: 'alice', fs, body: once(body), payload: () => ({ body: once(body), sha256: null }), contentLength: body.byteLength },
    ctx: c,
    meta,
    region: 'us-east-1',
    bucket,
    key: 'deep/er/obj.bin',
  })
  const id = await uploads.create(request(new Uint8Array(0)), 'application/x-mp', { who: 'me' })
  const parts = [randomBytes(5 * MiB), randomBytes(123)]
  const etags = []
  for (const [i, p] of parts.entries()) etags.push(await uploads.uploadPart(request(p), id, String(i + 1)))
  const etag = await (await uploads.prepareComplete(request(new Uint8Array(0)), id, etags.map((e, i) => ({ number: i + 1, etag: e }))))()
  t.equal(etag, md5OfMd5s(parts))
  const path = `/${bucket}/deep/er/obj.bin`
  const kept = await fs.metadata(c, path)
  t.equal(kept.contentType, 'application/x-mp', 'Content-Type on the S3 object itself')
  t.same(kept.userMeta, { who: 'me' }, 'metadata on the S3 object itself')
  const h = await fs.open(c, path, { read: true, write: false, append: false, create: false, truncate: false, exclusive: false })
  const got: Buffer[] = []
  for (let off = 0; ; ) {
    const b = await h.read(off, MiB)
    if (b.byteLength === 0) break
    got.push(Buffer.from(b))
    off += b.byteLength
  }
  await h.close()
  t.equal(md5(Buffer.concat(got)), md5(Buffer.concat(parts)), 'the object on S3 is the parts in order')
  t.equal((await meta.get(fs, path, await fs.stat(c, path), c)).etag, etag, 'HEAD answers the ETag Complete gave')
})

t.test('Complete answers at once and keeps the connection alive while it writes; a failure then is an error document in the 200', async (t) => {
  const f = await fixture(t)
  const data = [randomBytes(5 * MiB), randomBytes(5 * MiB)]
  const id = await f.create(f.alice, 'blocked/obj.bin')
  const etags = [await f.part(f.alice, 'blocked/obj.bin', id, 1, data[0]!), await f.part(f.alice, 'blocked/obj.bin', id, 2, data[1]!)]
  const parts = etags.map((etag, i) => ({ n: i + 1, etag }))
  // A file where the key needs a folder: found only once the object is being written.
  writeFileSync(join(f.root, 'bucket/blocked'), 'in the way')
  const failed = await f.call(f.alice, 'bucket', 'blocked/obj.bin', { method: 'POST', query: `uploadId=${id}`, body: f.completeXml(parts) })
  t.equal(failed?.status, 200, 'the status went out before the object was written')
  t.match(failed?.body, /^<\?xml version="1.0" encoding="UTF-8"\?>\s*<Error>/, 'then the error document, as S3 sends it')
  t.equal(await s3code(Promise.resolve().then(() => f.doc(failed))), 'InvalidArgument')
  t.same((await f.state.listMultipartParts(id)).map((p) => p.number), [1, 2], 'the upload and its parts stay: Complete can be sent again')
  rmSync(join(f.root, 'bucket/blocked'))
  const ok = await f.call(f.alice, 'bucket', 'blocked/obj.bin', { method: 'POST', query: `uploadId=${id}`, body: f.completeXml(parts) })
  t.match(ok?.body, /^<\?xml version="1.0" encoding="UTF-8"\?> +<CompleteMultipartUploadResult/, 'spaces kept the connection alive while the object was written')
  t.equal(f.doc(ok).CompleteMultipartUploadResult.ETag, `"${md5OfMd5s(data)}"`)
  t.ok(readFileSync(join(f.root, 'bucket/blocked/obj.bin')).equals(Buffer.concat(data)))
})
