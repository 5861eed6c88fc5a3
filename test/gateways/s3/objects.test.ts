/**
 * The S3 gateway's object operations with the AWS SDK v3 (and signed raw requests where
 * the SDK hides what is checked), over a local folder and over the sftp backend: what a
 * user of any S3 client sees, and what lands on the disk.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import t from 'tap'
import { BACKENDS, startS3Gateway } from './fixture.js'
import { rawS3 } from './raw.js'

const md5 = (b: string | Uint8Array) => createHash('md5').update(b).digest('hex')
const text = async (s3: S3Client, Bucket: string, Key: string, extra: Record<string, unknown> = {}) =>
  (await s3.send(new GetObjectCommand({ Bucket, Key, ...extra }))).Body!.transformToString()

/** What a rejection carries: the HTTP status (tap's matcher wants an Error's shape). */
const status = (code: number) => ({ $metadata: { httpStatusCode: code } }) as unknown as Error

for (const backend of BACKENDS) {
  t.test(`${backend}: buckets`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const s3 = gw.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'photos' }))
    t.ok(statSync(join(gw.root, 'photos')).isDirectory(), 'a bucket is a folder of the root')
    await t.rejects(s3.send(new CreateBucketCommand({ Bucket: 'photos' })), { name: 'BucketAlreadyOwnedByYou' })
    for (const bad of ['ab', 'Upper', 'a..b', '192.168.1.1', '-dash', 'xn--punycode']) {
      await t.rejects(s3.send(new CreateBucketCommand({ Bucket: bad })), { name: 'InvalidBucketName' }, `refused: ${bad}`)
    }
    gw.mkdir('made-by-sftp')
    gw.put('top-level-file.txt', 'not a bucket')
    const list = await s3.send(new ListBucketsCommand({}))
    t.same(list.Buckets?.map((b) => b.Name), ['made-by-sftp', 'photos'], 'folders at the top are buckets; files are not')
    t.ok(list.Buckets![0]!.CreationDate instanceof Date)
    await s3.send(new HeadBucketCommand({ Bucket: 'photos' }))
    await t.rejects(s3.send(new HeadBucketCommand({ Bucket: 'missing' })), status(404))
    t.equal((await s3.send(new GetBucketLocationCommand({ Bucket: 'photos' }))).LocationConstraint, undefined, 'us-east-1: an empty constraint')
    await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: 'a.jpg', Body: 'x' }))
    await t.rejects(s3.send(new DeleteBucketCommand({ Bucket: 'photos' })), { name: 'BucketNotEmpty' })
    t.ok(existsSync(join(gw.root, 'photos', 'a.jpg')), 'nothing removed')
    await s3.send(new DeleteObjectCommand({ Bucket: 'photos', Key: 'a.jpg' }))
    await s3.send(new DeleteBucketCommand({ Bucket: 'photos' }))
    t.notOk(existsSync(join(gw.root, 'photos')), 'an empty bucket is deleted')
    await t.rejects(s3.send(new DeleteBucketCommand({ Bucket: 'photos' })), { name: 'NoSuchBucket' })
  })

  t.test(`${backend}: put, get, head, ranges, metadata`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const s3 = gw.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'data' }))
    const body = randomBytes(3 * 1024 * 1024 + 17)
    const put = await s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin', Body: body, ContentType: 'application/x-test', Metadata: { owner: 'alice' } }))
    t.equal(put.ETag, `"${md5(body)}"`, 'the ETag of a PUT is the MD5 of its content')
    t.same(readFileSync(join(gw.root, 'data', 'deep', 'er', 'blob.bin')), body, 'stored as a file, parents made')
    const got = await s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin' }))
    t.same(Buffer.from(await got.Body!.transformToByteArray()), body, 'read back whole')
    t.equal(got.ContentLength, body.length)
    t.ok(got.LastModified instanceof Date)
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin' }))
    t.equal(head.ContentLength, body.length)
    t.equal(head.ETag, got.ETag, 'HEAD and GET agree on the ETag')
    t.equal(head.ETag, put.ETag, 'and it is the MD5 the PUT answered')
    t.equal(head.ContentType, 'application/x-test', 'the Content-Type given')
    t.same(head.Metadata, { owner: 'alice' }, 'x-amz-meta-* kept')

    // The SDK's default checksums: a streamed body goes aws-chunked with a CRC32 trailer.
    const sdk = gw.client({ checksums: 'default' })
    const streamed = await sdk.send(new PutObjectCommand({ Bucket: 'data', Key: 'streamed.bin', Body: Readable.from([body.subarray(0, 1000), body.subarray(1000)]), ContentLength: body.length }))
    t.equal(streamed.ETag, `"${md5(body)}"`, 'aws-chunked: the ETag is the MD5 of the decoded content')
    t.same(readFileSync(join(gw.root, 'data', 'streamed.bin')), body, 'aws-chunked: the content, without its framing')
    const checked = await sdk.send(new GetObjectCommand({ Bucket: 'data', Key: 'streamed.bin' }))
    t.same(Buffer.from(await checked.Body!.transformToByteArray()), body)

    const part = await s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin', Range: 'bytes=100-199' }))
    t.equal(part.$metadata.httpStatusCode, 206)
    t.equal(part.ContentRange, `bytes 100-199/${body.length}`)
    t.same(Buffer.from(await part.Body!.transformToByteArray()), body.subarray(100, 200), 'a range')
    const suffix = await s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin', Range: 'bytes=-10' }))
    t.same(Buffer.from(await suffix.Body!.transformToByteArray()), body.subarray(body.length - 10), 'a suffix range')
    const open = await s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin', Range: `bytes=${body.length - 5}-` }))
    t.same(Buffer.from(await open.Body!.transformToByteArray()), body.subarray(body.length - 5), 'an open range')
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin', Range: `bytes=${body.length}-` })), { ...status(416), name: 'InvalidRange' })

    // Overrides of the reply's headers (what presigned downloads use).
    const o = await s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er/blob.bin', ResponseContentType: 'text/x-over', ResponseContentDisposition: 'attachment; filename="x.bin"', ResponseCacheControl: 'no-cache' }))
    t.equal(o.ContentType, 'text/x-over')
    t.equal(o.ContentDisposition, 'attachment; filename="x.bin"')
    t.equal(o.CacheControl, 'no-cache')
    await o.Body!.transformToByteArray()

    // A directory is no object; a key ending in "/" on an empty body is a folder marker.
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'deep/er' })), { name: 'NoSuchKey' })
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'data', Key: 'missing' })), { name: 'NoSuchKey' })
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'nobucket', Key: 'missing' })), { name: 'NoSuchBucket' })
    const marker = await s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'empty/folder/', Body: '' }))
    t.equal(marker.ETag, `"${md5('')}"`)
    t.ok(statSync(join(gw.root, 'data', 'empty', 'folder')).isDirectory(), 'a folder marker is a folder')
    t.equal((await s3.send(new HeadObjectCommand({ Bucket: 'data', Key: 'empty/folder/' }))).ContentLength, 0)
    await t.rejects(s3.send(new PutObjectCommand({ Bucket: 'data', Key: 'x/', Body: 'content' })), { name: 'InvalidArgument' }, 'a folder cannot hold bytes')
    t.notOk(existsSync(join(gw.root, 'data', 'x')), 'and nothing was made')
    await t.rejects(s3.send(new PutObjectCommand({ Bucket: 'nobucket', Key: 'k', Body: 'x' })), { name: 'NoSuchBucket' })
    t.notOk(existsSync(join(gw.root, 'nobucket')), 'a PUT does not make a bucket')
  })

  t.test(`${backend}: conditional requests and atomic PUTs`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const s3 = gw.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'cond' }))
    await s3.send(new PutObjectCommand({ Bucket: 'cond', Key: 'k.txt', Body: 'version 1' }))
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'cond', Key: 'k.txt' }))
    const { ETag } = head
    const lm = head.LastModified!
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'cond', Key: 'k.txt', IfNoneMatch: ETag })), status(304), 'If-None-Match: 304')
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'cond', Key: 'k.txt', IfMatch: '"0000"' })), { ...status(412), name: 'PreconditionFailed' }, 'If-Match: 412')
    t.equal(await text(s3, 'cond', 'k.txt', { IfMatch: ETag }), 'version 1', 'If-Match that holds')
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'cond', Key: 'k.txt', IfModifiedSince: new Date(lm.getTime() + 5000) })), status(304), 'If-Modified-Since: 304')
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'cond', Key: 'k.txt', IfUnmodifiedSince: new Date(lm.getTime() - 5000) })), status(412), 'If-Unmodified-Since: 412')
    t.equal(await text(s3, 'cond', 'k.txt', { IfMatch: ETag, IfUnmodifiedSince: new Date(lm.getTime() - 5000) }), 'version 1', 'If-Match that holds wins over If-Unmodified-Since')
    await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'cond', Key: 'k.txt', IfNoneMatch: ETag, IfModifiedSince: new Date(lm.getTime() - 5000) })), status(304), 'If-None-Match decides over If-Modified-Since')

    await t.rejects(s3.send(new PutObjectCommand({ Bucket: 'cond', Key: 'k.txt', Body: 'version 2', IfNoneMatch: '*' })), { name: 'PreconditionFailed' }, 'If-None-Match: * on an existing key')
    t.equal(readFileSync(join(gw.root, 'cond', 'k.txt'), 'utf8'), 'version 1', 'left as it was')
    await s3.send(new PutObjectCommand({ Bucket: 'cond', Key: 'new.txt', Body: 'fresh', IfNoneMatch: '*' }))
    t.equal(readFileSync(join(gw.root, 'cond', 'new.txt'), 'utf8'), 'fresh', 'If-None-Match: * on a new key')

    // A Content-MD5 that does not match: BadDigest, and the old object stays, with no debris.
    const bad = await rawS3(gw.endpoint, gw.key, 'PUT', '/cond/k.txt', { body: 'version 3', headers: { 'content-md5': Buffer.from(md5('other'), 'hex').toString('base64') } })
    t.equal(bad.status, 400)
    t.match(bad.text, '<Code>BadDigest</Code>')
    t.equal(readFileSync(join(gw.root, 'cond', 'k.txt'), 'utf8'), 'version 1', 'the old object stays')
    t.same(readdirSync(join(gw.root, 'cond')).sort(), ['k.txt', 'new.txt'], 'no temporary file left')
    const good = await rawS3(gw.endpoint, gw.key, 'PUT', '/cond/k.txt', { body: 'version 3', headers: { 'content-md5': Buffer.from(md5('version 3'), 'hex').toString('base64') } })
    t.equal(good.status, 200)
    t.equal(good.headers.get('etag'), `"${md5('version 3')}"`)
    // A PUT whose parents it made, then failed: the folders it made go too.
    const failed = await rawS3(gw.endpoint, gw.key, 'PUT', '/cond/new/dirs/k.txt', { body: 'x', headers: { 'content-md5': Buffer.from(md5('y'), 'hex').toString('base64') } })
    t.equal(failed.status, 400)
    t.notOk(existsSync(join(gw.root, 'cond', 'new')), 'no folder left by a failed PUT')

    // A signed payload that is not the one signed (the worker writing it checks its SHA-256
    // before it commits): XAmzContentSHA256Mismatch; the old object stays, nothing is left.
    const big = randomBytes(3 * 1024 * 1024 + 17)
    const signedFor = createHash('sha256').update(Buffer.concat([big, Buffer.from('!')])).digest('hex')
    const forged = await rawS3(gw.endpoint, gw.key, 'PUT', '/cond/k.txt', { body: big, headers: { 'x-amz-content-sha256': signedFor } })
    t.equal(forged.status, 400)
    t.match(forged.text, '<Code>XAmzContentSHA256Mismatch</Code>')
    t.match(forged.text, `<ClientComputedContentSHA256>${signedFor}</ClientComputedContentSHA256>`)
    t.equal(readFileSync(join(gw.root, 'cond', 'k.txt'), 'utf8'), 'version 3', 'the object signed over is not replaced')
    t.same(readdirSync(join(gw.root, 'cond')).sort(), ['k.txt', 'new.txt'], 'no temporary file left')
    const forgedNew = await rawS3(gw.endpoint, gw.key, 'PUT', '/cond/made/for/it.bin', { body: big, headers: { 'x-amz-content-sha256': signedFor } })
    t.match(forgedNew.text, '<Code>XAmzContentSHA256Mismatch</Code>')
    t.notOk(existsSync(join(gw.root, 'cond', 'made')), 'nor the folders made for it')
    const signed = await rawS3(gw.endpoint, gw.key, 'PUT', '/cond/made/for/it.bin', { body: big })
    t.equal(signed.status, 200, 'the same body signed as it is')
    t.equal(signed.headers.get('etag'), `"${md5(big)}"`)
    t.ok(readFileSync(join(gw.root, 'cond', 'made', 'for', 'it.bin')).equals(big), 'stored, in the folders made for it')
  })

  t.test(`${backend}: concurrent PUTs of one key: the ETag is always the MD5 of the bytes stored`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const s3 = gw.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'race' }))
    for (let round = 0; round < 10; round++) {
      // Same size, other bytes: a storage with whole-second times cannot tell them apart by size and time.
      const bodies = Array.from({ length: 8 }, () => randomBytes(50_000))
      await Promise.all(bodies.map((Body) => s3.send(new PutObjectCommand({ Bucket: 'race', Key: 'same.bin', Body }))))
      const head = await s3.send(new HeadObjectCommand({ Bucket: 'race', Key: 'same.bin' }))
      const stored = readFileSync(join(gw.root, 'race', 'same.bin'))
      t.equal(head.ETag, `"${md5(stored)}"`, `round ${round}: HEAD's ETag is the MD5 of what is stored`)
    }
  })

  t.test(`${backend}: copy and delete`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const s3 = gw.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'src' }))
    await s3.send(new CreateBucketCommand({ Bucket: 'dst' }))
    await s3.send(new PutObjectCommand({ Bucket: 'src', Key: 'dir/a b+c.txt', Body: 'payload', ContentType: 'text/x-a', Metadata: { m: '1' } }))
    const put = await s3.send(new HeadObjectCommand({ Bucket: 'src', Key: 'dir/a b+c.txt' }))
    const copy = await s3.send(new CopyObjectCommand({ Bucket: 'dst', Key: 'copied/x.txt', CopySource: `src/${encodeURIComponent('dir/a b+c.txt')}` }))
    t.equal(copy.CopyObjectResult?.ETag, put.ETag, 'COPY keeps the ETag')
    t.equal(readFileSync(join(gw.root, 'dst', 'copied', 'x.txt'), 'utf8'), 'payload')
    await t.rejects(s3.send(new CopyObjectCommand({ Bucket: 'src', Key: 'dir/a b+c.txt', CopySource: `src/${encodeURIComponent('dir/a b+c.txt')}` })), { name: 'InvalidRequest' }, 'onto itself without REPLACE')
    const copied = await s3.send(new HeadObjectCommand({ Bucket: 'dst', Key: 'copied/x.txt' }))
    t.equal(copied.ContentType, 'text/x-a', 'COPY keeps the Content-Type')
    t.same(copied.Metadata, { m: '1' }, 'and the metadata')
    await s3.send(new CopyObjectCommand({ Bucket: 'src', Key: 'dir/a b+c.txt', CopySource: `src/${encodeURIComponent('dir/a b+c.txt')}`, MetadataDirective: 'REPLACE', ContentType: 'text/x-b' }))
    const replaced = await s3.send(new HeadObjectCommand({ Bucket: 'src', Key: 'dir/a b+c.txt' }))
    t.equal(replaced.ContentType, 'text/x-b', 'REPLACE takes the request\'s Content-Type')
    t.same(replaced.Metadata, {}, 'and its (absent) metadata')
    t.equal(readFileSync(join(gw.root, 'src', 'dir', 'a b+c.txt'), 'utf8'), 'payload', 'REPLACE onto itself keeps the bytes')
    await t.rejects(s3.send(new CopyObjectCommand({ Bucket: 'dst', Key: 'y.txt', CopySource: 'src/dir/missing' })), { name: 'NoSuchKey' })
    await t.rejects(s3.send(new CopyObjectCommand({ Bucket: 'dst', Key: 'y.txt', CopySource: `src/${encodeURIComponent('dir/a b+c.txt')}`, CopySourceIfMatch: '"nope"' })), { name: 'PreconditionFailed' })
    await t.rejects(s3.send(new CopyObjectCommand({ Bucket: 'dst', Key: 'y.txt', CopySource: `src/${encodeURIComponent('dir/a b+c.txt')}`, CopySourceIfNoneMatch: put.ETag })), { name: 'PreconditionFailed' })
    t.notOk(existsSync(join(gw.root, 'dst', 'y.txt')), 'no copy when a condition fails')

    // Delete: a missing key is a success; never recursive; empty parents vanish.
    t.equal((await s3.send(new DeleteObjectCommand({ Bucket: 'dst', Key: 'nothing/here' }))).$metadata.httpStatusCode, 204)
    await s3.send(new DeleteObjectCommand({ Bucket: 'src', Key: 'dir' }))
    t.ok(existsSync(join(gw.root, 'src', 'dir', 'a b+c.txt')), 'deleting a folder\'s name deletes nothing')
    await s3.send(new DeleteObjectCommand({ Bucket: 'src', Key: 'dir/' }))
    t.ok(existsSync(join(gw.root, 'src', 'dir', 'a b+c.txt')), 'nor does its marker: a folder with content stays')
    await s3.send(new DeleteObjectCommand({ Bucket: 'dst', Key: 'copied/x.txt' }))
    t.notOk(existsSync(join(gw.root, 'dst', 'copied')), 'the prefix vanished with its last object')
    t.ok(existsSync(join(gw.root, 'dst')), 'the bucket stays')
    await t.rejects(s3.send(new DeleteObjectCommand({ Bucket: 'nobucket', Key: 'k' })), { name: 'NoSuchBucket' })

    for (let i = 0; i < 5; i++) await s3.send(new PutObjectCommand({ Bucket: 'dst', Key: `many/k${i}`, Body: String(i) }))
    const del = await s3.send(new DeleteObjectsCommand({ Bucket: 'dst', Delete: { Objects: [{ Key: 'many/k0' }, { Key: 'many/k1' }, { Key: 'absent' }, { Key: 'bad/../key' }] } }))
    t.same(del.Deleted?.map((d) => d.Key).sort(), ['absent', 'many/k0', 'many/k1'])
    t.same(del.Errors?.map((e) => [e.Key, e.Code]), [['bad/../key', 'InvalidArgument']], 'a key that cannot be stored is reported')
    const quiet = await s3.send(new DeleteObjectsCommand({ Bucket: 'dst', Delete: { Quiet: true, Objects: [{ Key: 'many/k2' }, { Key: 'many/k3' }, { Key: 'many/k4' }] } }))
    t.equal(quiet.Deleted, undefined, 'Quiet: only errors')
    t.notOk(existsSync(join(gw.root, 'dst', 'many')), 'all gone, and their prefix')
    const noMd5 = await rawS3(gw.endpoint, gw.key, 'POST', '/dst', { query: { delete: '' }, body: '<Delete><Object><Key>k</Key></Object></Delete>' })
    t.equal(noMd5.status, 400, 'DeleteObjects without Content-MD5 or a checksum')
    t.match(noMd5.text, 'Content-MD5')
  })
}
