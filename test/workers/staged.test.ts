/**
 * Staged uploads live on the pool's threads (workers/staged/, core/staged.ts):
 *
 * - the bytes of a tus upload and of S3 multipart parts never pass through the main
 *   thread's file system: every `node:fs` function of this (the main) thread is wrapped,
 *   the ESM bindings the server's modules imported included (`syncBuiltinESMExports`),
 *   and not one call names a staging folder while uploads are created, written, resumed,
 *   listed, completed and removed, although their files appear there meanwhile (worker
 *   threads have their own `node:fs`, which the wrapping does not reach: that is the point),
 *   and their commits (the last PATCH, Complete) stream no byte to the main thread;
 * - every pool thread killed while a part streams in leaves no debris (the part being
 *   written is removed by a replacement thread) and other uploads intact: an upload is
 *   its files, never a thread's memory, so each one completes afterwards;
 * - a name that is not one path segment is refused by the worker (EINVAL), also by a
 *   commit into a storage: nothing outside the staging folder is made, read or removed.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import { readdir } from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'
import { s3Client } from '../helpers/s3-client.js'
import { ADMIN_PASSWORD, adminToken } from '../helpers/share.js'
import { Channel, PoolStaged } from '../../workers/client.js'
import { WorkerPool } from '../../workers/pool.js'

const MiB = 1024 * 1024
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')

/**
 * Records every call of a main-thread `node:fs` function (sync, callback and promise
 * forms, streams) whose first argument is a path under one of `dirs`, while `on`.
 */
function spyOnMainThreadFs(dirs: () => readonly string[]): { calls: string[]; on: boolean; restore(): void } {
  const spy = { calls: [] as string[], on: false, restore: () => {} }
  const undo: (() => void)[] = []
  const wrap = (obj: Record<string, unknown>, label: string) => {
    for (const name of Object.keys(obj)) {
      const fn = obj[name]
      // Functions, not classes (Stats, ReadStream...) nor the `promises` namespace.
      if (typeof fn !== 'function' || /^[A-Z]/.test(name) || name === 'promises') continue
      const wrapped = function (this: unknown, ...args: unknown[]) {
        const p = args[0]
        const path = typeof p === 'string' ? p : p instanceof URL ? p.pathname : Buffer.isBuffer(p) ? p.toString() : null
        if (spy.on && path !== null && dirs().some((d) => path === d || path.startsWith(`${d}/`))) spy.calls.push(`${label}.${name}(${path})`)
        return (fn as (...a: unknown[]) => unknown).apply(this, args)
      }
      obj[name] = wrapped
      undo.push(() => (obj[name] = fn))
    }
  }
  wrap(fs as unknown as Record<string, unknown>, 'fs')
  wrap(fs.promises as unknown as Record<string, unknown>, 'fs/promises')
  syncBuiltinESMExports()
  spy.restore = () => {
    for (const u of undo) u()
    syncBuiltinESMExports()
  }
  return spy
}

t.test("a staged upload's bytes never pass through the main thread's file system", async (t) => {
  const { app, url, dataDir } = await startTestServer(t, { s3: { port: 0 }, admin_password: ADMIN_PASSWORD, staging_limits: { reserve_bytes: MiB } })
  const tusDir = join(dataDir, 'tus')
  const mpDir = join(dataDir, 's3-multipart')
  const spy = spyOnMainThreadFs(() => [tusDir, mpDir])
  t.teardown(() => spy.restore())

  // The spy sees this thread's ESM named imports (as the server's modules use them): a control.
  spy.on = true
  await readdir(tusDir)
  spy.on = false
  t.same(spy.calls, [`fs/promises.readdir(${tusDir})`], 'the spy sees a main-thread call through an ESM named import')
  spy.calls.length = 0

  const admin = api(url, await adminToken(url))
  t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: 'tmp' }) })).status, 200)
  const k = ((await (await admin('POST', '/admin/api/users/alice/s3-keys')).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const s3 = s3Client(t, `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`, { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key })
  await s3.send(new CreateBucketCommand({ Bucket: 'bkt' }))
  const token = await tmpSession(url)

  spy.on = true
  // tus: created, written in two PATCHes (probed with HEAD between), finished.
  const body = randomBytes(3 * MiB + 17)
  const tus = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' }
  const created = await fetch(`${url}/api/files/tus/?path=/t.bin`, { method: 'POST', headers: { ...tus, 'upload-length': String(body.length) } })
  t.equal(created.status, 201, 'tus upload created')
  const at = new URL(created.headers.get('location')!, url).href
  const patch = (off: number, end: number) =>
    fetch(at, { method: 'PATCH', headers: { ...tus, 'upload-offset': String(off), 'content-type': 'application/offset+octet-stream' }, body: body.subarray(off, end) })
  t.equal((await patch(0, 2 * MiB)).status, 204, 'first PATCH')
  spy.on = false
  t.equal(fs.statSync(join(tusDir, at.split('/').pop()!)).size, 2 * MiB, 'the staged file is there, with the bytes sent (looked at by the test, unrecorded)')
  spy.on = true
  t.equal((await fetch(at, { method: 'HEAD', headers: tus })).headers.get('upload-offset'), String(2 * MiB), 'HEAD tells the offset')
  // The commit's bytes go from the staging folder to the storage on a worker: no stream of
  // them comes to this thread (every stream read here draws credits on the pool's budget).
  let credits = 0
  let counting = false
  const take = app.pool.buffers.take.bind(app.pool.buffers)
  app.pool.buffers.take = (n: number, floor?: boolean) => {
    if (counting) credits++
    return take(n, floor)
  }
  counting = true
  t.equal((await patch(2 * MiB, body.length)).status, 204, 'last PATCH')
  counting = false
  t.equal(credits, 0, 'the tus commit streamed no byte to the main thread')
  const got = await fetch(`${url}/api/files/cat?path=/t.bin`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(md5(Buffer.from(await got.arrayBuffer())), md5(body), 'the file is stored whole')

  // S3 multipart: created, two parts, listed, completed.
  const parts = [randomBytes(5 * MiB), randomBytes(MiB + 3)]
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'm.bin' }))
  const etags: string[] = []
  for (const [i, p] of parts.entries()) etags.push((await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'm.bin', UploadId, PartNumber: i + 1, Body: p }))).ETag!)
  t.same(etags, parts.map((p) => `"${md5(p)}"`), "each part's ETag is its MD5, computed where it was written")
  spy.on = false
  t.equal(fs.readdirSync(join(mpDir, UploadId!)).length, 2, 'the parts are staged (looked at by the test, unrecorded)')
  spy.on = true
  t.equal((await s3.send(new ListPartsCommand({ Bucket: 'bkt', Key: 'm.bin', UploadId }))).Parts?.length, 2, 'ListParts')
  counting = true
  await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'm.bin', UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }))
  counting = false
  t.equal(credits, 0, 'Complete streamed no byte of the parts to the main thread')
  const obj = await s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 'm.bin' }))
  t.equal(md5(Buffer.from(await obj.Body!.transformToByteArray())), md5(Buffer.concat(parts)), 'the object is the parts in order')
  spy.on = false

  t.same(spy.calls, [], 'no main-thread fs call named a staging folder')
  t.same(fs.readdirSync(tusDir), [], 'nothing left staged for tus')
  t.same(fs.readdirSync(mpDir), [], 'nothing left staged for S3')
})

t.test('every pool thread killed while a part streams in: no debris, other uploads intact', async (t) => {
  const { app, url, dataDir } = await startTestServer(t, { workers: 2, s3: { port: 0 }, admin_password: ADMIN_PASSWORD, staging_limits: { reserve_bytes: 0 } })
  const mpDir = join(dataDir, 's3-multipart')
  const admin = api(url, await adminToken(url))
  t.equal((await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name: 'alice', password: 'alice-password-1', connection: 'tmp' }) })).status, 200)
  const k = ((await (await admin('POST', '/admin/api/users/alice/s3-keys')).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
  const s3 = s3Client(t, `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`, { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }, { maxAttempts: 1 })
  await s3.send(new CreateBucketCommand({ Bucket: 'bkt' }))

  // B: one part staged before the crash.
  const b1 = randomBytes(5 * MiB)
  const b2 = randomBytes(1000)
  const B = (await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'b.bin' }))).UploadId!
  const bTag1 = (await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'b.bin', UploadId: B, PartNumber: 1, Body: b1 }))).ETag!
  // A: a part whose body the test holds open.
  const A = (await s3.send(new CreateMultipartUploadCommand({ Bucket: 'bkt', Key: 'a.bin' }))).UploadId!
  const held = new PassThrough()
  const length = 6 * MiB
  const sending = s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'a.bin', UploadId: A, PartNumber: 1, Body: held, ContentLength: length })).then(
    () => 'answered',
    (err: Error) => `failed: ${err.name}`,
  )
  held.write(randomBytes(2 * MiB))
  const staged = () => fs.readdirSync(join(mpDir, A)).map((f) => fs.statSync(join(mpDir, A, f)).size)
  const until = async (what: string, cond: () => boolean) => {
    const end = Date.now() + 60_000
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  await until('the part is being written', () => staged().some((n) => n > 0))

  for (const w of app.pool.threads) await w.terminate()
  held.end(randomBytes(length - 2 * MiB)) // the rest, to a server whose threads are gone
  t.match(await sending, /^failed/, "the part's upload fails")
  await until('the part cut off is removed', () => staged().length === 0)
  t.same(staged(), [], 'no debris of the part being written')
  t.same(fs.readdirSync(join(mpDir, B)).length, 1, "the other upload's part is intact")

  // Both uploads go on, on the replacement threads.
  const bTag2 = (await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'b.bin', UploadId: B, PartNumber: 2, Body: b2 }))).ETag!
  await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'b.bin', UploadId: B, MultipartUpload: { Parts: [{ ETag: bTag1, PartNumber: 1 }, { ETag: bTag2, PartNumber: 2 }] } }))
  const gotB = await s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 'b.bin' }))
  t.equal(md5(Buffer.from(await gotB.Body!.transformToByteArray())), md5(Buffer.concat([b1, b2])), 'the other upload completes whole')
  const a1 = randomBytes(MiB)
  const aTag = (await s3.send(new UploadPartCommand({ Bucket: 'bkt', Key: 'a.bin', UploadId: A, PartNumber: 1, Body: a1 }))).ETag!
  await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'bkt', Key: 'a.bin', UploadId: A, MultipartUpload: { Parts: [{ ETag: aTag, PartNumber: 1 }] } }))
  const gotA = await s3.send(new GetObjectCommand({ Bucket: 'bkt', Key: 'a.bin' }))
  t.equal(md5(Buffer.from(await gotA.Body!.transformToByteArray())), md5(a1), 'the cut-off upload takes its part again and completes')
  t.same(fs.readdirSync(mpDir), [], 'nothing left staged')
})

t.test('a staging area never names a file outside its folder', async (t) => {
  const pool = new WorkerPool({ workers: 1, tasksPerWorker: 4, maxQueue: 10 })
  t.teardown(() => pool.close())
  const base = t.testdir({ area: {}, storage: {}, 'outside.txt': 'keep' })
  const area = new PoolStaged(pool).area(join(base, 'area'))
  const refused = async (what: string, p: Promise<unknown>) => t.match(await p.then(() => 'done', (err: { code?: string }) => err.code), 'EINVAL', what)
  await refused('an id that climbs out', area.create('../outside.txt', 'file'))
  await refused('a removal that climbs out', area.remove('..'))
  await refused('a part that climbs out', area.remove('x', '../../outside.txt'))
  const storage = join(base, 'storage')
  const commit = (source: { area: string; id: string; parts?: string[] }) =>
    new Channel(pool, { type: 'local', root: storage }).transfer({ requestId: 'c', signal: new AbortController().signal }, { op: 'commitStaged', path: '/got', source, overwrite: true, parents: false })
  await refused('a commit of an id through a path', commit({ area: area.dir, id: 'a/..' }))
  await refused('a commit of an id that climbs out', commit({ area: area.dir, id: '..', parts: ['outside.txt'] }))
  await refused('a commit of a part that climbs out', commit({ area: area.dir, id: 'x', parts: ['../../outside.txt'] }))
  await refused('a commit from a relative folder', commit({ area: 'area', id: 'x' }))
  t.same(fs.readdirSync(storage), [], 'no commit wrote anything')
  await refused('a write through a path', area.write('../outside.txt', { offset: 0 }, (async function* () { yield Buffer.from('x') })()))
  t.equal(fs.readFileSync(join(base, 'outside.txt'), 'utf8'), 'keep', 'the file outside is untouched')
  t.same(fs.readdirSync(join(base, 'area')), [], 'nothing made in the area either')
})
