/**
 * Keys and buckets that try to leave the root, or that no folder can hold, sent byte for
 * byte: refused with S3's errors, never resolved as paths; odd but storable names kept
 * verbatim. And read-only keys: every write refused, nothing changed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import t from 'tap'
import { BACKENDS, startS3Gateway } from './fixture.js'
import { rawS3 } from './raw.js'

/** Every path under `dir`, relative. */
function tree(dir: string, base = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const rel = base + e.name
    return e.isDirectory() ? [rel + '/', ...tree(join(dir, e.name), rel + '/')] : [rel]
  })
}

/** What a rejection carries: the HTTP status (tap's matcher wants an Error's shape). */
const status = (code: number) => ({ $metadata: { httpStatusCode: code } }) as unknown as Error

for (const backend of BACKENDS) {
  t.test(`${backend}: hostile keys are refused or kept verbatim, never resolved`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const s3 = gw.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'box' }))
    gw.put('box/a/secret.txt', 'inside')
    const outside = dirname(gw.root)
    const before = readdirSync(outside).sort()
    const refused: [string, string][] = [
      ['/box/../../escape.txt', 'InvalidArgument'],
      ['/box/a/..%2F..%2F..%2Fescape.txt', 'InvalidArgument'],
      ['/box/%2E%2E/escape.txt', 'InvalidArgument'],
      ['/box/a/./b', 'InvalidArgument'],
      ['/box//lead', 'InvalidArgument'],
      ['/box/a//b', 'InvalidArgument'],
      ['/box/.filegate-abc.part', 'InvalidArgument'], // an upload's hidden name: never listed, so refused
      ['/box/a/.filegate-abc.part/b', 'InvalidArgument'],
      ['/box/a%00b', 'InvalidArgument'],
      ['/box/a%0Ab', 'InvalidArgument'],
      ['/box/%FF%FE', 'InvalidURI'],
      [`/box/${'k'.repeat(1025)}`, 'KeyTooLongError'],
      ['/../escape.txt', 'InvalidBucketName'],
      ['/%2E%2E/escape.txt', 'InvalidBucketName'],
    ]
    for (const [path, code] of refused) {
      const put = await rawS3(gw.endpoint, gw.key, 'PUT', path, { body: 'pwned' })
      t.equal(put.status, 400, `PUT ${path}: 400`)
      t.match(put.text, `<Code>${code}</Code>`, `PUT ${path}: ${code}`)
      const get = await rawS3(gw.endpoint, gw.key, 'GET', path)
      t.equal(get.status, 400, `GET ${path}: 400`)
      const del = await rawS3(gw.endpoint, gw.key, 'DELETE', path)
      t.equal(del.status, 400, `DELETE ${path}: 400`)
    }
    const copy = await rawS3(gw.endpoint, gw.key, 'PUT', '/box/copy.txt', { headers: { 'x-amz-copy-source': '/box/..%2F..%2Fetc%2Fpasswd' } })
    t.equal(copy.status, 400, 'a copy source that climbs is refused')
    t.same(readdirSync(outside).sort(), before, 'nothing written next to the root')
    t.same(tree(gw.root).sort(), ['box/', 'box/a/', 'box/a/secret.txt'], 'nothing written in it either')
    t.equal(readFileSync(join(gw.root, 'box/a/secret.txt'), 'utf8'), 'inside', 'nothing deleted')

    // Odd names a folder can hold are kept as they are.
    // A backslash is a character of a name, never a separator: `..\..\x` is one name.
    const odd = ['we#ird ?name%20+plus.txt', 'ünï/cødé 日本.txt', "quote's \"dq\".txt", '-dash', 'dots..in...name', '.hidden', 'back\\slash.txt', '..\\..\\escape.txt']
    for (const key of odd) await s3.send(new PutObjectCommand({ Bucket: 'box', Key: key, Body: key }))
    for (const key of odd) t.equal(readFileSync(join(gw.root, 'box', key), 'utf8'), key, `stored verbatim: ${key}`)
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'box' }))
    for (const key of odd) t.ok(listed.Contents?.some((c) => c.Key === key), `listed verbatim: ${key}`)
    for (const key of odd) t.equal(await (await s3.send(new GetObjectCommand({ Bucket: 'box', Key: key }))).Body!.transformToString(), key)
  })

  t.test(`${backend}: a read-only key reads, and every write is AccessDenied with nothing changed`, async (t) => {
    const gw = await startS3Gateway(t, { backend, readOnly: true })
    gw.put('ro/file.txt', 'original')
    gw.mkdir('ro/empty')
    const before = tree(gw.root).sort()
    const s3 = gw.client()
    t.equal(await (await s3.send(new GetObjectCommand({ Bucket: 'ro', Key: 'file.txt' }))).Body!.transformToString(), 'original', 'reads work')
    const writes: [string, () => Promise<unknown>][] = [
      ['PutObject', () => s3.send(new PutObjectCommand({ Bucket: 'ro', Key: 'file.txt', Body: 'changed' }))],
      ['PutObject (new key)', () => s3.send(new PutObjectCommand({ Bucket: 'ro', Key: 'new/x.txt', Body: 'x' }))],
      ['PutObject (folder marker)', () => s3.send(new PutObjectCommand({ Bucket: 'ro', Key: 'newdir/', Body: '' }))],
      ['CopyObject', () => s3.send(new CopyObjectCommand({ Bucket: 'ro', Key: 'copy.txt', CopySource: 'ro/file.txt' }))],
      ['DeleteObject', () => s3.send(new DeleteObjectCommand({ Bucket: 'ro', Key: 'file.txt' }))],
      ['DeleteObject (missing)', () => s3.send(new DeleteObjectCommand({ Bucket: 'ro', Key: 'missing' }))],
      ['DeleteObjects', () => s3.send(new DeleteObjectsCommand({ Bucket: 'ro', Delete: { Objects: [{ Key: 'file.txt' }] } }))],
      ['CreateBucket', () => s3.send(new CreateBucketCommand({ Bucket: 'newbucket' }))],
      ['DeleteBucket', () => s3.send(new DeleteBucketCommand({ Bucket: 'ro' }))],
      ['CreateMultipartUpload', () => s3.send(new CreateMultipartUploadCommand({ Bucket: 'ro', Key: 'big' }))],
    ]
    for (const [name, call] of writes) await t.rejects(call(), { ...status(403), name: 'AccessDenied' }, name)
    t.same(tree(gw.root).sort(), before, 'nothing changed')
    t.equal(readFileSync(join(gw.root, 'ro/file.txt'), 'utf8'), 'original')
    t.notOk(existsSync(join(gw.root, 'newbucket')))
  })
}
