/**
 * @module test/gateways/s3/meta.test
 * The S3 gateway's ETags and metadata (gateways/s3/meta/) over a real view of a local
 * folder (worker pool, local driver) and the real SQLite state store: MD5 ETags checked
 * against an independent MD5, metadata round trip, a file changed by another door falls
 * back to a stable ETag that is not an MD5, the 2 KB limit.
 */
import { createHash, randomBytes } from 'node:crypto'
import { utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openView } from '../../../gateways/connection/view.js'
import { openSqliteState } from '../../../front/state/sqlite-state.js'
import { ObjectMeta, md5While, multipartEtag, userMetaFrom } from '../../../gateways/s3/meta/index.js'
import { S3Error } from '../../../gateways/s3/errors.js'
import { WorkerPool } from '../../../workers/pool.js'
import { startS3rver } from '../../servers/s3rver.js'
import { FULL_ACCESS, READ_ONLY } from '../../../core/permissions.js'

const pool = new WorkerPool({ workers: 1, tasksPerWorker: 16, maxQueue: 1000 })
t.teardown(() => pool.close())
const ctx = () => ({ requestId: 'meta', signal: new AbortController().signal })
const PUT = { read: false, write: true, append: false, create: true, truncate: true, exclusive: false }
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')

async function fixture(t: Test) {
  const base = t.testdir({ root: {} })
  const root = join(base, 'root')
  const state = await openSqliteState(join(base, 'state'))
  t.teardown(() => state.close())
  const fs = await openView({ pool, spec: { type: 'local', root }, permissions: FULL_ACCESS, stagingDir: join(base, 'staging') })
  t.teardown(() => fs.close())
  return { root, state, fs, meta: new ObjectMeta(state) }
}

/** Writes `data` through the view, hashing while it streams, as PutObject does. */
async function putHashed(fs: Awaited<ReturnType<typeof fixture>>['fs'], path: string, chunks: Uint8Array[]) {
  const hashed = md5While((async function* () { yield* chunks })())
  const h = await fs.open(ctx(), path, PUT)
  let off = 0
  for await (const c of hashed.body) {
    await h.write(off, c)
    off += c.byteLength
  }
  await h.close()
  return { etag: hashed.digest(), entry: await fs.stat(ctx(), path) }
}

t.test('an object written through the gateway: its ETag is the MD5 of its bytes, with its metadata', async (t) => {
  const { root, fs, meta } = await fixture(t)
  const chunks = [randomBytes(300_000), randomBytes(1), randomBytes(2 * 1024 * 1024 + 7)]
  const { etag, entry } = await putHashed(fs, '/obj.bin', chunks)
  t.equal(etag, md5(Buffer.concat(chunks)), 'the streamed MD5 is the MD5 of the whole content')
  await meta.put(fs, '/obj.bin', entry, { etag, contentType: 'image/png', userMeta: { colour: 'blau', 'über': 'ja' } })
  t.same(await meta.get(fs, '/obj.bin', await fs.stat(ctx(), '/obj.bin')), { etag, contentType: 'image/png', userMeta: { colour: 'blau', 'über': 'ja' } })
  // Another view of the same folder (another login of the same storage) sees the same.
  const other = await openView({ pool, spec: { type: 'local', root }, permissions: READ_ONLY, stagingDir: join(root, '..', 'staging2') })
  t.teardown(() => other.close())
  t.equal(other.identity, fs.identity, 'same storage and root: same identity')
  t.equal((await meta.get(other, '/obj.bin', await other.stat(ctx(), '/obj.bin'))).etag, etag)
})

t.test('a file written or changed by another door: a stable ETag that no client takes for an MD5', async (t) => {
  const { root, fs, meta } = await fixture(t)
  const { etag, entry } = await putHashed(fs, '/f.txt', [Buffer.from('written through s3')])
  await meta.put(fs, '/f.txt', entry, { etag, userMeta: { a: '1' } })
  // The disk (another door) rewrites it: the recorded MD5 must not be served for other bytes.
  writeFileSync(join(root, 'f.txt'), 'changed elsewhere!')
  const changed = await fs.stat(ctx(), '/f.txt')
  const got = await meta.get(fs, '/f.txt', changed)
  t.not(got.etag, etag, 'the old MD5 is not served')
  t.not(got.etag, md5(Buffer.from('changed elsewhere!')), 'no MD5 is claimed either')
  t.match(got.etag, /^[0-9a-f]{32}-1$/, 'the multipart shape: not compared to an MD5 by clients')
  t.same(got.userMeta, {}, 'the old metadata went with it')
  t.equal((await meta.get(fs, '/f.txt', await fs.stat(ctx(), '/f.txt'))).etag, got.etag, 'stable while the file stays')
  // Same size, another time: another ETag.
  utimesSync(join(root, 'f.txt'), new Date(), new Date(Date.now() - 3_600_000))
  const touched = await meta.get(fs, '/f.txt', await fs.stat(ctx(), '/f.txt'))
  t.not(touched.etag, got.etag, 'a new modification time: a new ETag')
  // A file never written through the gateway.
  writeFileSync(join(root, 'plain.txt'), 'plain')
  t.match((await meta.get(fs, '/plain.txt', await fs.stat(ctx(), '/plain.txt'))).etag, /^[0-9a-f]{32}-1$/)
  // An empty file: the MD5 of nothing is true whoever wrote it.
  writeFileSync(join(root, 'empty'), '')
  t.equal((await meta.get(fs, '/empty', await fs.stat(ctx(), '/empty'))).etag, md5(Buffer.alloc(0)), 'an empty file: its true MD5')
  // After forget, the record is gone (the written MD5 is no longer served).
  const { etag: e2, entry: en2 } = await putHashed(fs, '/g.txt', [Buffer.from('gg')])
  await meta.put(fs, '/g.txt', en2, { etag: e2, userMeta: {} })
  await meta.forget(fs, '/g.txt')
  t.match((await meta.get(fs, '/g.txt', en2)).etag, /-1$/, 'forgotten: the stable ETag')
})

t.test('a listing page: getMany gives each file what get gives, in the order asked', async (t) => {
  const { root, fs, meta } = await fixture(t)
  const written = await putHashed(fs, '/a.bin', [Buffer.from('through s3')])
  await meta.put(fs, '/a.bin', written.entry, { etag: written.etag, userMeta: { k: 'v' } })
  const stale = await putHashed(fs, '/b.bin', [Buffer.from('through s3 too')])
  await meta.put(fs, '/b.bin', stale.entry, { etag: stale.etag, userMeta: {} })
  writeFileSync(join(root, 'b.bin'), 'changed elsewhere')
  writeFileSync(join(root, 'c.txt'), 'never through s3')
  writeFileSync(join(root, 'd'), '')
  const files = await Promise.all(['/c.txt', '/a.bin', '/d', '/b.bin'].map(async (path) => ({ path, entry: await fs.stat(ctx(), path) })))
  const one = await Promise.all(files.map((f) => meta.get(fs, f.path, f.entry)))
  const many = await meta.getMany(fs, files)
  t.same(many, one, 'the same values as one get each')
  t.equal(many[1]!.etag, written.etag, 'the MD5 recorded for a file written through the gateway')
  t.not(many[3]!.etag, stale.etag, 'not the MD5 of a file changed since')
  t.same(await meta.getMany(fs, []), [], 'an empty page')
})

t.test('multipart ETag: md5 of the binary part MD5s, -N', async (t) => {
  const parts = [randomBytes(1000), randomBytes(2000), randomBytes(5)]
  const expected = createHash('md5').update(Buffer.concat(parts.map((p) => createHash('md5').update(p).digest()))).digest('hex') + '-3'
  t.equal(multipartEtag(parts.map(md5)), expected)
})

/** Request headers as the engines give them (no raw bytes: the values are their own UTF-8). */
const asSent = (pairs: [string, string][]) => ({ headers: () => pairs })

t.test('user metadata: x-amz-meta-* collected, over 2 KB refused with MetadataTooLarge', async (t) => {
  t.same(userMetaFrom(asSent([['x-amz-meta-one', '1'], ['content-type', 'text/plain'], ['X-Amz-Meta-Two', 'zwei'], ['x-amz-meta-', 'none']])), { one: '1', two: 'zwei' })
  t.same(userMetaFrom(asSent([['x-amz-meta-big', 'x'.repeat(2045)]])), { big: 'x'.repeat(2045) }, '2048 bytes: allowed')
  try {
    userMetaFrom(asSent([['x-amz-meta-big', 'x'.repeat(2046)]]))
    t.fail('over 2 KB accepted')
  } catch (err) {
    t.ok(err instanceof S3Error)
    t.match(err, { code: 'MetadataTooLarge', status: 400 })
  }
})

t.test('over an S3 backend: metadata kept on the object itself, the store\'s ETag where no record says otherwise', async (t) => {
  const s3 = await startS3rver(t)
  const base = t.testdir()
  const state = await openSqliteState(join(base, 'state'))
  t.teardown(() => state.close())
  const spec = { type: 's3' as const, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, root: await s3.bucket() }
  const fs = await openView({ pool, spec, permissions: FULL_ACCESS, stagingDir: join(base, 'staging') })
  t.teardown(() => fs.close())
  const meta = new ObjectMeta(state)
  t.equal(fs.abilities.metadata, true, 'the S3 backend keeps object metadata')

  // Written with its metadata (as PutObject and multipart's Complete do): the object holds it all; no record.
  const data = randomBytes(100_000)
  await fs.writeFile(ctx(), '/native.bin', (async function* () { yield Buffer.from(data) })() /* a copy: the write may take (detach) the chunk it is given */, { overwrite: true, metadata: { contentType: 'application/x-native', userMeta: { colour: 'red' } } })
  const entry = await fs.stat(ctx(), '/native.bin')
  t.equal(entry.etag, md5(data), "stat reports the store's ETag (here the MD5)")
  await meta.put(fs, '/native.bin', entry, { etag: md5(data), contentType: 'application/x-native', userMeta: { colour: 'red' } }, ctx())
  t.equal(await state.getObjectMeta(fs.identity, '/native.bin'), null, 'nothing recorded in the state store')
  t.same(await meta.get(fs, '/native.bin', entry, ctx()), { etag: md5(data), contentType: 'application/x-native', userMeta: { colour: 'red' } }, 'read back from the object')
  const listed = (await fs.list(ctx(), '/')).entries.find((e) => e.name === 'native.bin')!
  t.equal((await meta.get(fs, '/native.bin', listed)).etag, md5(data), "a listing: the store's ETag, no request per object")

  // An ETag the store does not have (a multipart ETag of the client's parts): recorded.
  await meta.put(fs, '/native.bin', entry, { etag: `${md5(data)}-3`, contentType: 'application/x-native', userMeta: { colour: 'red' } }, ctx())
  t.equal((await meta.get(fs, '/native.bin', await fs.stat(ctx(), '/native.bin'), ctx())).etag, `${md5(data)}-3`, 'the record wins while the object stays')

  // Rewritten through another door (no metadata): the store's true MD5, the record no longer holds.
  await new Promise((r) => setTimeout(r, 1100)) // S3 times are whole seconds
  const other = randomBytes(2000)
  const h2 = await fs.open(ctx(), '/native.bin', PUT)
  await h2.write(0, other)
  await h2.close()
  const after = await meta.get(fs, '/native.bin', await fs.stat(ctx(), '/native.bin'), ctx())
  t.equal(after.etag, md5(other), "the store's ETag of the new content")
  t.same(after.userMeta, {}, 'the old metadata is gone with the old object')
})
