/**
 * @module test/front/backend-s3.test
 * The HTTP API end to end on an s3 backend: a real filegate (uWS, worker threads) in
 * front of a real S3 server (s3rver on 127.0.0.1), through a configured `s3`
 * connection. Every endpoint; a folder of more objects than one listing page; the
 * account root (buckets as folders); the login answers (wrong secret, nothing
 * listening); and faults: the server stopped in the middle of a download and of an
 * upload, then restarted on the same port and data, with filegate left running.
 */
import { createHash, randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { api, startTestServer } from '../helpers/filegate.js'
import { freePort } from '../servers/process.js'
import { type S3rverServer, startS3rver } from '../servers/s3rver.js'
import { bodyStoppingServer, readToEnd, zipEntryNames } from '../helpers/transfers.js'
import { s3Client } from '../helpers/s3-client.js'

/**
 * A refusal is answered on the refusal itself, not after a backend timeout or a retry
 * loop: the error's code already tells a refusal from a timeout, and this bound (the
 * default backend timeout, 20 s) only catches an answer held that long. Not tighter: a
 * busy machine takes seconds over a fresh server's first login.
 */
const QUICK_MS = 20_000

t.setTimeout(300_000) // s3rver is a slow emulator (~100 MB/s, listings cost O(objects))
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'

const MiB = 1024 * 1024
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

const s3 = await startS3rver(t)

function sdk(t: Test, server: S3rverServer = s3): S3Client {
  return s3Client(t, server.endpoint, { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey })
}

/** filegate with an s3 connection fixed to this endpoint. */
async function gate(t: Test, endpoint = s3.endpoint, more: Record<string, unknown> = {}): Promise<string> {
  const { url } = await startTestServer(t, { connections: [{ label: 's3', type: 's3', endpoint, region: 'us-east-1', path_style: true, ...more }] })
  return url
}

async function login(url: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/api/session`, {
    method: 'POST',
    body: JSON.stringify({ type: 's3', access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, ...body }),
  })
}

async function session(t: Test, url: string, path: string | undefined): Promise<ReturnType<typeof api>> {
  const res = await login(url, path === undefined ? {} : { path })
  const json = (await res.json()) as { status: string; result: { authorization: string } }
  t.equal(json.status, 'ok', 'session created')
  return api(url, json.result.authorization)
}

async function expectError(t: Test, res: Response, status: number, code: string, what: string): Promise<void> {
  t.equal(res.status, status, `${what}: HTTP ${status}`)
  t.match(await res.json(), { status: 'error', code }, `${what}: ${code}`)
}

type Listing = { name: string; type: string; size: number; time: number }[]

async function keysOf(c: S3Client, bucket: string): Promise<string[]> {
  const keys: string[] = []
  let token: string | undefined
  do {
    const out = await c.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }))
    keys.push(...(out.Contents ?? []).map((o) => o.Key!))
    token = out.IsTruncated ? out.NextContinuationToken : undefined
  } while (token)
  return keys.sort()
}

async function objectBytes(c: S3Client, bucket: string, key: string): Promise<Buffer> {
  const out = await c.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  return Buffer.from(await out.Body!.transformToByteArray())
}


t.test('every endpoint on s3', async (t) => {
  const url = await gate(t)
  const c = sdk(t)
  const bucket = await s3.bucket()
  const call = await session(t, url, bucket)
  const ls = async (path: string) => ((await (await call('GET', '/api/files/ls', { path })).json()) as { results: Listing }).results

  t.same(await ls('/'), [], 'empty bucket')

  // Upload (parents created; multipart: over one 8 MiB part) and download.
  const data = randomBytes(20 * MiB + 123)
  let res = await call('POST', '/api/files/cat', { path: '/docs/big.bin' }, { body: data })
  t.equal(res.status, 200, 'upload')
  await res.body?.cancel()
  t.equal(sha256(await objectBytes(c, bucket, 'docs/big.bin')), sha256(data), 'on the server: the same bytes')
  t.same(await keysOf(c, bucket), ['docs/', 'docs/big.bin'], 'the parent is a marker object; nothing else left')
  t.same(s3.pendingUploads(bucket), [], 'no multipart upload left open')
  res = await call('GET', '/api/files/cat', { path: '/docs/big.bin' })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-length'), String(data.length))
  t.equal(sha256(new Uint8Array(await res.arrayBuffer())), sha256(data), 'download: sha256 matches')

  res = await call('GET', '/api/files/cat', { path: '/docs/big.bin' }, { headers: { range: `bytes=${5 * MiB}-${6 * MiB + 9}` } })
  t.equal(res.status, 206, 'range')
  t.equal(sha256(new Uint8Array(await res.arrayBuffer())), sha256(data.subarray(5 * MiB, 6 * MiB + 10)), 'range bytes')
  res = await call('GET', '/api/files/cat', { path: '/docs/big.bin' }, { headers: { range: 'bytes=0-0' } })
  t.same(Buffer.from(await res.arrayBuffer()), data.subarray(0, 1), 'a one-byte range')

  res = await call('HEAD', '/api/files/cat', { path: '/docs/big.bin' })
  t.equal(res.status, 200, 'HEAD')
  t.equal(res.headers.get('content-length'), String(data.length))

  res = await call('POST', '/api/files/cat', { path: '/docs/big.bin', overwrite: 'false' }, { body: 'x' })
  await expectError(t, res, 409, 'CONFLICT', 'upload overwrite=false onto a file')

  // mkdir, touch, ls.
  res = await call('POST', '/api/files/mkdir', { path: '/projects/' })
  t.equal(res.status, 200, 'mkdir')
  await res.body?.cancel()
  await expectError(t, await call('POST', '/api/files/mkdir', { path: '/projects/' }), 409, 'CONFLICT', 'mkdir again')
  t.same(await ls('/projects/'), [], 'an empty folder lists (its marker is not an entry)')
  res = await call('POST', '/api/files/touch', { path: '/projects/notes.md' })
  t.equal(res.status, 200, 'touch')
  await res.body?.cancel()
  t.match(await ls('/projects/'), [{ name: 'notes.md', type: 'file', size: 0 }])
  t.match(await ls('/'), [{ name: 'docs', type: 'directory', size: 0 }, { name: 'projects', type: 'directory' }])
  await expectError(t, await call('GET', '/api/files/ls', { path: '/docs/big.bin' }), 400, 'INVALID_INPUT', 'ls of a file')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/docs/' }), 400, 'INVALID_INPUT', 'cat of a folder')

  // zip of a folder and a file.
  await c.send(new PutObjectCommand({ Bucket: bucket, Key: 'docs/hello.txt', Body: 'hello filegate' }))
  res = await call('GET', '/api/files/zip', { path: ['/docs/', '/projects/notes.md'] })
  t.equal(res.status, 200, 'zip')
  const names = await zipEntryNames(Buffer.from(await res.arrayBuffer()))
  t.same(names.sort(), ['docs/', 'docs/big.bin', 'docs/hello.txt', 'notes.md'], 'zip entries')

  // mv of a file (server-side copy + delete), of a folder into new parents, rm of a tree.
  const odd = '/projects/Hello, 世界 & 100% #1.txt'
  res = await call('POST', '/api/files/mv', { from: '/docs/hello.txt', to: odd })
  t.equal(res.status, 200, 'mv a file to a name that needs encoding')
  await res.body?.cancel()
  t.equal(await (await call('GET', '/api/files/cat', { path: odd })).text(), 'hello filegate')
  await expectError(t, await call('GET', '/api/files/cat', { path: '/docs/hello.txt' }), 404, 'NOT_FOUND', 'moved away')
  res = await call('POST', '/api/files/mv', { from: '/docs/', to: '/archive/2024/docs/' })
  t.equal(res.status, 200, 'mv a folder into new parents')
  await res.body?.cancel()
  t.equal(sha256(await objectBytes(c, bucket, 'archive/2024/docs/big.bin')), sha256(data), 'moved object intact')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/docs/' }), 404, 'NOT_FOUND', 'the old folder is gone')
  res = await call('POST', '/api/files/rm', { path: '/archive/' })
  t.equal(res.status, 200, 'rm a tree')
  await res.body?.cancel()
  t.same(await keysOf(c, bucket), ['projects/', 'projects/Hello, 世界 & 100% #1.txt', 'projects/notes.md'], 'what is left on the server')
  await expectError(t, await call('GET', '/api/files/ls', { path: '/nothing/' }), 404, 'NOT_FOUND', 'ls missing')
  await expectError(t, await call('POST', '/api/files/rm', { path: '/nothing' }), 404, 'NOT_FOUND', 'rm missing')
})

t.test('a folder of more objects than one listing page, made by another client', async (t) => {
  // Pages of 100 keys (`list_chunk`): 234 objects are three pages, as 1234 are two of 1000.
  const url = await gate(t, s3.endpoint, { list_chunk: 100 })
  const c = sdk(t)
  const bucket = await s3.bucket()
  const n = 234
  let next = 0
  // No markers: folders that exist only as key prefixes, as other S3 tools make them.
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++
        await c.send(new PutObjectCommand({ Bucket: bucket, Key: `deep/many/f-${String(i).padStart(5, '0')}`, Body: String(i) }))
      }
    }),
  )
  const call = await session(t, url, `${bucket}/deep`)
  let res = await call('GET', '/api/files/ls', { path: '/' })
  t.match(((await res.json()) as { results: Listing }).results, [{ name: 'many', type: 'directory' }], 'an implicit folder')
  res = await call('GET', '/api/files/ls', { path: '/many/' })
  const all = ((await res.json()) as { results: Listing }).results
  t.equal(all.length, n, `${n} entries over three listing pages`)
  t.same(all.map((e) => e.name), Array.from({ length: n }, (_, i) => `f-${String(i).padStart(5, '0')}`), 'every name once, sorted')
  t.equal(await (await call('GET', '/api/files/cat', { path: '/many/f-00200' })).text(), '200')
  res = await call('POST', '/api/files/rm', { path: '/many/' })
  t.equal(res.status, 200, 'rm of an implicit folder')
  await res.body?.cancel()
  t.same(await keysOf(c, bucket), [], 'every object deleted')
})

t.test('no bucket fixed: the buckets are the top folders', async (t) => {
  const own = await startS3rver(t)
  const { url } = await startTestServer(t, { connections: [{ label: 's3', type: 's3', endpoint: own.endpoint, region: 'us-east-1', path_style: true }] })
  const call = await session(t, url, undefined)
  const ls = async (path: string) => ((await (await call('GET', '/api/files/ls', { path })).json()) as { results: Listing }).results
  t.same(await ls('/'), [], 'no buckets yet')
  let res = await call('POST', '/api/files/mkdir', { path: '/alpha-bucket/' })
  t.equal(res.status, 200, 'mkdir at the top creates a bucket')
  await res.body?.cancel()
  res = await call('POST', '/api/files/cat', { path: '/alpha-bucket/sub/file.txt' }, { body: 'inside' })
  t.equal(res.status, 200, 'upload into the bucket')
  await res.body?.cancel()
  t.match(await ls('/'), [{ name: 'alpha-bucket', type: 'directory' }])
  t.match(await ls('/alpha-bucket/'), [{ name: 'sub', type: 'directory' }])
  await expectError(t, await call('POST', '/api/files/cat', { path: '/loose.txt' }, { body: 'x' }), 403, 'FORBIDDEN', 'a file outside any bucket')
  res = await call('POST', '/api/files/rm', { path: '/alpha-bucket/' })
  t.equal(res.status, 200, 'rm of a bucket with its content')
  await res.body?.cancel()
  t.same(await ls('/'), [], 'the bucket is gone')
})

t.test('login answers', async (t) => {
  const url = await gate(t)
  const bucket = await s3.bucket()
  let started = Date.now()
  await expectError(t, await login(url, { path: bucket, secret_access_key: 'wrong' }), 401, 'NOT_AUTHENTICATED', 'wrong secret')
  t.ok(Date.now() - started < QUICK_MS, `answered in ${Date.now() - started} ms`)
  await expectError(t, await login(url, { path: bucket, access_key_id: 'NOBODY' }), 401, 'NOT_AUTHENTICATED', 'unknown access key')
  await expectError(t, await login(url, { secret_access_key: 'wrong' }), 401, 'NOT_AUTHENTICATED', 'wrong secret, no bucket fixed')
  await expectError(t, await login(url, { path: 'no-such-bucket-here' }), 502, 'BACKEND_UNREACHABLE', 'a bucket that does not exist')
  for (const chunk of [0, 1001, 'many']) {
    const res = await login(url, { path: bucket, list_chunk: chunk })
    t.equal(res.status, 400, `list_chunk ${chunk}: HTTP 400`)
    t.match(await res.json(), { status: 'error', code: 'INVALID_INPUT', message: /list_chunk.*1 to 1000/ }, `list_chunk ${chunk}: says what it takes`)
  }
  started = Date.now()
  const nobody = await gate(t, `http://127.0.0.1:${await freePort()}`)
  await expectError(t, await login(nobody, { path: bucket }), 502, 'BACKEND_UNREACHABLE', 'nothing listening')
  t.ok(Date.now() - started < QUICK_MS, `answered in ${Date.now() - started} ms`)
})

t.test('faults: s3rver stopped mid-download and mid-upload, then back on the same port', async (t) => {
  // Its own server: stopping it must not disturb the other tests of this file.
  const own = await startS3rver(t)
  const c = sdk(t, own)
  const bucket = await own.bucket()
  const { url } = await startTestServer(t, { connections: [{ label: 's3', type: 's3', endpoint: own.endpoint, region: 'us-east-1', path_style: true }] })
  const call = await session(t, url, bucket)

  const size = 160 * MiB
  const big = randomBytes(size)
  await c.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.bin', Body: big }))
  const res = await call('GET', '/api/files/cat', { path: '/big.bin' })
  t.equal(res.status, 200, 'the download starts')
  t.equal(res.headers.get('content-length'), String(size))
  const reader = res.body!.getReader()
  const first = (await reader.read()).value?.length ?? 0
  await own.stop()
  const { cut, bytes: got } = await readToEnd(reader, first)
  t.ok(cut, `the download is cut (${got} of ${size} bytes), not ended as if complete`)
  t.ok(got < size, 'short of the whole file')

  // An upload whose body keeps coming while the server goes away, once it holds a part:
  // filegate knows the upload then. (Stopped while it answers CreateMultipartUpload,
  // the server would keep an upload whose id never reached filegate, which only a
  // bucket lifecycle rule removes: docs/backends.md, "s3".)
  await own.start()
  const body = bodyStoppingServer(() => own.stop(), (sent) => sent >= 20 * MiB && own.storedParts(bucket) > 0)
  const up = await call('POST', '/api/files/cat', { path: '/upload.bin' }, { body, duplex: 'half' } as RequestInit).then(
    async (r) => ({ status: r.status, json: (await r.json().catch(() => null)) as { code?: string } | null }),
    () => null,
  )
  t.ok(up === null || up.status >= 500, `the upload fails: ${up === null ? 'connection cut' : `${up.status} ${up.json?.code}`}`)
  if (up !== null) t.equal(up.json?.code, 'BACKEND_UNREACHABLE', 'as BACKEND_UNREACHABLE')

  // Back on the same port and data: the next requests work without restarting filegate.
  await own.start()
  const ls = await call('GET', '/api/files/ls', { path: '/' })
  t.equal(ls.status, 200, 'ls after the restart')
  t.same(((await ls.json()) as { results: Listing }).results.map((e) => e.name), ['big.bin'], 'no upload.bin, complete or partial')
  await t.rejects(c.send(new HeadObjectCommand({ Bucket: bucket, Key: 'upload.bin' })), { name: 'NotFound' }, 'no object on the server')
  // The abort that could not reach the stopped server is sent once it answers again.
  const deadline = Date.now() + 30_000 // the deferred abort runs after the next success; slow on a loaded machine
  while (own.pendingUploads(bucket).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  t.same(own.pendingUploads(bucket), [], 'no multipart upload left on the server')

  const small = randomBytes(3 * MiB)
  let r = await call('POST', '/api/files/cat', { path: '/after.bin' }, { body: small })
  t.equal(r.status, 200, 'upload after the restart')
  await r.body?.cancel()
  r = await call('GET', '/api/files/cat', { path: '/after.bin' })
  t.equal(sha256(new Uint8Array(await r.arrayBuffer())), sha256(small), 'download after the restart')
  r = await call('GET', '/api/files/cat', { path: '/big.bin' }, { headers: { range: 'bytes=0-1048575' } })
  t.equal(sha256(new Uint8Array(await r.arrayBuffer())), sha256(big.subarray(0, MiB)), 'a range of the big file')
})
