/**
 * Multipart uploads through the real S3 gateway (filegate started by the test, keys made
 * through the admin API) with real clients: the AWS SDK v3 with its default checksums
 * (aws-chunked bodies with trailers), boto3 (ListParts, ListMultipartUploads, Abort) and
 * the aws CLI's `s3 cp` of 40 MiB (multipart both ways), over a local folder and the sftp
 * backend. ETags are checked against MD5s computed here; other users' uploads and
 * read-only keys are refused; nothing is left staged. Also the ETag rule end to end:
 * PutObject's MD5 and metadata kept, a file changed on disk given a stable non-MD5 ETag.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  ListPartsCommand,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import t from 'tap'
import { startTestServer } from '../../helpers/filegate.js'
import { requireBinary, serverDir } from '../../servers/process.js'
import { runCommand } from '../sftp/clients.js'
import { s3Client } from '../../helpers/s3-client.js'
import { BACKENDS, type S3Gw, startS3Gateway } from './fixture.js'

const AWS = requireBinary('/usr/bin/aws', 'awscli')
const MiB = 1024 * 1024
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex')
const md5OfMd5s = (parts: Uint8Array[]) => `${createHash('md5').update(Buffer.concat(parts.map((p) => createHash('md5').update(p).digest()))).digest('hex')}-${parts.length}`
const unquote = (e: string | undefined) => (e ?? '').replace(/"/g, '')

/** The S3 error code a command failed with. */
async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (err) {
    if (err instanceof S3ServiceException) return err.name
    throw err
  }
  return 'no error'
}

/** What is left in the gateway's multipart staging. */
const staged = (gw: S3Gw): string[] => {
  const dir = join(gw.app.config.data_dir, 's3-multipart')
  return existsSync(dir) ? readdirSync(dir) : []
}

t.test('AWS SDK v3, default checksums: create, parts, list, complete, read back; other users and read-only keys refused; abort', async (t) => {
  const gw = await startS3Gateway(t)
  const s3 = gw.client({ checksums: 'default' })
  await s3.send(new CreateBucketCommand({ Bucket: 'mpu' }))
  const Key = 'dir/sub/big.bin'
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'mpu', Key, ContentType: 'application/x-sdk', Metadata: { colour: 'green' } }))
  t.match(UploadId, /^[0-9a-f]{32}$/)
  const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB + 1), randomBytes(1000)]
  const done: { PartNumber: number; ETag: string }[] = []
  for (const [i, Body] of parts.entries()) {
    const r = await s3.send(new UploadPartCommand({ Bucket: 'mpu', Key, UploadId, PartNumber: i + 1, Body }))
    t.equal(unquote(r.ETag), md5(Body), `part ${i + 1}: its MD5`)
    done.push({ PartNumber: i + 1, ETag: r.ETag! })
  }
  const listed = await s3.send(new ListPartsCommand({ Bucket: 'mpu', Key, UploadId }))
  t.same(listed.Parts?.map((p) => [p.PartNumber, p.Size]), [[1, 5 * MiB], [2, 5 * MiB + 1], [3, 1000]])
  const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: 'mpu' }))
  t.same(uploads.Uploads?.map((u) => [u.Key, u.UploadId]), [[Key, UploadId]])

  // Another user of the same storage: the upload is not there for it.
  const bob = gw.client({ key: await gw.addUser(`bob${randomBytes(3).toString('hex')}`), checksums: 'default' })
  t.equal(await failure(bob.send(new UploadPartCommand({ Bucket: 'mpu', Key, UploadId, PartNumber: 1, Body: 'intruder' }))), 'NoSuchUpload')
  t.equal(await failure(bob.send(new CompleteMultipartUploadCommand({ Bucket: 'mpu', Key, UploadId, MultipartUpload: { Parts: done } }))), 'NoSuchUpload')
  t.equal(await failure(bob.send(new AbortMultipartUploadCommand({ Bucket: 'mpu', Key, UploadId }))), 'NoSuchUpload')
  t.same((await bob.send(new ListMultipartUploadsCommand({ Bucket: 'mpu' }))).Uploads ?? [], [], "bob lists none of alice's uploads")
  const reader = gw.client({ key: await gw.addUser(`reader${randomBytes(3).toString('hex')}`, { readOnly: true }) })
  t.equal(await failure(reader.send(new CreateMultipartUploadCommand({ Bucket: 'mpu', Key: 'ro.bin' }))), 'AccessDenied', 'a read-only key cannot start an upload')

  t.equal(await failure(s3.send(new UploadPartCommand({ Bucket: 'mpu', Key, UploadId, PartNumber: 10001, Body: 'x' }))), 'InvalidArgument', 'part number 10001')
  t.notOk(existsSync(join(gw.root, 'mpu/dir/sub/big.bin')), 'nothing at the key before Complete')
  const complete = await s3.send(new CompleteMultipartUploadCommand({ Bucket: 'mpu', Key, UploadId, MultipartUpload: { Parts: done } }))
  t.equal(unquote(complete.ETag), md5OfMd5s(parts), 'Complete: md5 of the part MD5s, -3')
  t.ok(readFileSync(join(gw.root, 'mpu/dir/sub/big.bin')).equals(Buffer.concat(parts)), 'the file on disk is the parts in order')
  const head = await s3.send(new HeadObjectCommand({ Bucket: 'mpu', Key }))
  t.equal(unquote(head.ETag), md5OfMd5s(parts), 'HeadObject: the same ETag')
  t.equal(head.ContentType, 'application/x-sdk')
  t.same(head.Metadata, { colour: 'green' })
  const got = await s3.send(new GetObjectCommand({ Bucket: 'mpu', Key }))
  t.equal(md5(await got.Body!.transformToByteArray()), md5(Buffer.concat(parts)), 'GetObject: the whole object')
  t.same(staged(gw), [], 'the staging is gone')

  // A Complete that fails once the object is being written (a file where the key needs a
  // folder): the 200 carries S3's error document, which the SDK raises as the error.
  const { UploadId: blocked } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'mpu', Key: 'blocked/obj.bin' }))
  const b1 = await s3.send(new UploadPartCommand({ Bucket: 'mpu', Key: 'blocked/obj.bin', UploadId: blocked, PartNumber: 1, Body: randomBytes(1000) }))
  gw.put('mpu/blocked', 'in the way')
  t.equal(await failure(s3.send(new CompleteMultipartUploadCommand({ Bucket: 'mpu', Key: 'blocked/obj.bin', UploadId: blocked, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: b1.ETag! }] } }))), 'InvalidArgument', 'an error in the 200: raised by the SDK')
  await s3.send(new AbortMultipartUploadCommand({ Bucket: 'mpu', Key: 'blocked/obj.bin', UploadId: blocked }))

  const { UploadId: gone } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'mpu', Key: 'gone.bin' }))
  await s3.send(new UploadPartCommand({ Bucket: 'mpu', Key: 'gone.bin', UploadId: gone, PartNumber: 1, Body: randomBytes(1000) }))
  await s3.send(new AbortMultipartUploadCommand({ Bucket: 'mpu', Key: 'gone.bin', UploadId: gone }))
  t.equal(await failure(s3.send(new ListPartsCommand({ Bucket: 'mpu', Key: 'gone.bin', UploadId: gone }))), 'NoSuchUpload', 'aborted: NoSuchUpload')
  t.same(staged(gw), [], 'aborted: nothing staged')
  t.notOk(existsSync(join(gw.root, 'mpu/gone.bin')))
})

t.test('boto3: multipart with ListParts, ListMultipartUploads and Abort', async (t) => {
  const gw = await startS3Gateway(t)
  const script = `
import hashlib, os, sys
import boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['EP'], aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'],
                  region_name='us-east-1', config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
s3.create_bucket(Bucket='pyb')
data = [os.urandom(5 * 1024 * 1024), os.urandom(5 * 1024 * 1024), os.urandom(777)]
uid = s3.create_multipart_upload(Bucket='pyb', Key='dir/py.bin', ContentType='text/x-py', Metadata={'from': 'boto3'})['UploadId']
parts = []
for i, d in enumerate(data):
    r = s3.upload_part(Bucket='pyb', Key='dir/py.bin', UploadId=uid, PartNumber=i + 1, Body=d)
    assert r['ETag'].strip('"') == hashlib.md5(d).hexdigest(), r['ETag']
    parts.append({'PartNumber': i + 1, 'ETag': r['ETag']})
lp = s3.list_parts(Bucket='pyb', Key='dir/py.bin', UploadId=uid, MaxParts=2)
assert [p['PartNumber'] for p in lp['Parts']] == [1, 2] and lp['IsTruncated'], lp
lp2 = s3.list_parts(Bucket='pyb', Key='dir/py.bin', UploadId=uid, PartNumberMarker=lp['NextPartNumberMarker'])
assert [(p['PartNumber'], p['Size']) for p in lp2['Parts']] == [(3, 777)] and not lp2['IsTruncated'], lp2
assert [u['UploadId'] for u in s3.list_multipart_uploads(Bucket='pyb')['Uploads']] == [uid]
done = s3.complete_multipart_upload(Bucket='pyb', Key='dir/py.bin', UploadId=uid, MultipartUpload={'Parts': parts})
expect = hashlib.md5(b''.join(hashlib.md5(d).digest() for d in data)).hexdigest() + '-3'
assert done['ETag'].strip('"') == expect, done
h = s3.head_object(Bucket='pyb', Key='dir/py.bin')
assert h['ETag'].strip('"') == expect and h['ContentType'] == 'text/x-py' and h['Metadata'] == {'from': 'boto3'}, h
assert s3.get_object(Bucket='pyb', Key='dir/py.bin')['Body'].read() == b''.join(data)
uid2 = s3.create_multipart_upload(Bucket='pyb', Key='gone.bin')['UploadId']
s3.upload_part(Bucket='pyb', Key='gone.bin', UploadId=uid2, PartNumber=1, Body=b'x' * 1000)
s3.abort_multipart_upload(Bucket='pyb', Key='gone.bin', UploadId=uid2)
try:
    s3.list_parts(Bucket='pyb', Key='gone.bin', UploadId=uid2)
    sys.exit('listed after abort')
except s3.exceptions.NoSuchUpload:
    pass
assert s3.list_multipart_uploads(Bucket='pyb').get('Uploads', []) == []
print('boto3 ok')
`
  const r = await runCommand('python3', ['-c', script], {
    env: { PATH: process.env.PATH, HOME: serverDir(t, 'boto3'), EP: gw.endpoint, AK: gw.key.accessKeyId, SK: gw.key.secretAccessKey, AWS_EC2_METADATA_DISABLED: 'true' },
    timeoutMs: 120_000,
  })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, 'boto3 ok')
  t.ok(readFileSync(join(gw.root, 'pyb/dir/py.bin')).length === 10 * MiB + 777, 'the object on disk')
  t.notOk(existsSync(join(gw.root, 'pyb/gone.bin')), 'the aborted upload made nothing')
  t.same(staged(gw), [], 'nothing staged')
})

for (const backend of BACKENDS) {
  t.test(`${backend}: aws s3 cp of 40 MiB is a multipart upload, and back`, async (t) => {
    const gw = await startS3Gateway(t, { backend })
    const dir = serverDir(t, 'aws-mp')
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dir,
      AWS_ACCESS_KEY_ID: gw.key.accessKeyId,
      AWS_SECRET_ACCESS_KEY: gw.key.secretAccessKey,
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_CONFIG_FILE: join(dir, 'none'),
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none'),
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_PAGER: '',
    }
    const aws = async (args: readonly string[]) => {
      const r = await runCommand(AWS, ['--endpoint-url', gw.endpoint, ...args], { env, timeoutMs: 300_000 })
      t.equal(r.code, 0, `aws ${args.slice(0, 3).join(' ')}: ${r.stderr}`)
      return r
    }
    await aws(['s3', 'mb', 's3://big'])
    const data = randomBytes(40 * MiB)
    writeFileSync(join(dir, 'big.bin'), data)
    await aws(['s3', 'cp', join(dir, 'big.bin'), 's3://big/in/big.bin']) // 8 MiB parts by default
    t.ok(readFileSync(join(gw.root, 'big/in/big.bin')).equals(data), 'the file on the storage')
    const head = JSON.parse((await aws(['s3api', 'head-object', '--bucket', 'big', '--key', 'in/big.bin'])).stdout) as { ETag: string; ContentLength: number }
    const eight = Array.from({ length: 5 }, (_, i) => data.subarray(i * 8 * MiB, (i + 1) * 8 * MiB))
    t.equal(unquote(head.ETag), md5OfMd5s(eight), 'ETag: md5 of the five 8 MiB parts, -5')
    t.equal(head.ContentLength, 40 * MiB)
    await aws(['s3', 'cp', 's3://big/in/big.bin', join(dir, 'back.bin')])
    t.ok(readFileSync(join(dir, 'back.bin')).equals(data), 'downloaded back whole')
    t.same(staged(gw), [], 'nothing staged')
  })
}

t.test('nodes sharing the store and staging_dir: parts sent to two nodes, completed at a third', async (t) => {
  const shared = join(serverDir(t, 's3-shared'), 'staging')
  const a = await startS3Gateway(t, { stagingDir: shared })
  const more = async () => {
    const { app } = await startTestServer(t, { s3: { port: 0 }, data_dir: a.app.config.data_dir, staging_dir: shared, connections: a.app.config.connections })
    return s3Client(t, `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`, a.key)
  }
  const [b, c] = [await more(), await more()]
  const s3a = a.client()
  await s3a.send(new CreateBucketCommand({ Bucket: 'spread' }))
  const [one, two] = [randomBytes(5 * MiB), randomBytes(MiB)]
  const { UploadId } = await s3a.send(new CreateMultipartUploadCommand({ Bucket: 'spread', Key: 'x.bin' }))
  const p1 = await s3a.send(new UploadPartCommand({ Bucket: 'spread', Key: 'x.bin', UploadId, PartNumber: 1, Body: one }))
  const p2 = await b.send(new UploadPartCommand({ Bucket: 'spread', Key: 'x.bin', UploadId, PartNumber: 2, Body: two }))
  t.same(readdirSync(join(shared, 's3-multipart')), [UploadId], 'the parts are staged in the shared folder')
  t.notOk(existsSync(join(a.app.config.data_dir, 's3-multipart')), 'not in the data directory')
  const listed = await c.send(new ListPartsCommand({ Bucket: 'spread', Key: 'x.bin', UploadId }))
  t.same(listed.Parts?.map((p) => p.PartNumber), [1, 2], 'a third node lists both parts')
  const done = await c.send(
    new CompleteMultipartUploadCommand({ Bucket: 'spread', Key: 'x.bin', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] } }),
  )
  t.equal(unquote(done.ETag), md5OfMd5s([one, two]), 'completed at the third node')
  t.ok(readFileSync(join(a.root, 'spread/x.bin')).equals(Buffer.concat([one, two])), 'the object is whole')
  t.same(readdirSync(join(shared, 's3-multipart')), [], 'nothing left staged')
})

t.test('ETags and metadata through the gateway: PutObject keeps them; a file changed through another door gets a stable ETag that is no MD5', async (t) => {
  const gw = await startS3Gateway(t)
  const s3 = gw.client({ checksums: 'default' })
  await s3.send(new CreateBucketCommand({ Bucket: 'meta' }))
  const body = randomBytes(300_000)
  const put = await s3.send(new PutObjectCommand({ Bucket: 'meta', Key: 'a/obj.bin', Body: body, ContentType: 'image/x-test', Metadata: { owner: 'alice', 'two-words': 'x y' } }))
  t.equal(unquote(put.ETag), md5(body), 'PutObject: the MD5')
  const head = await s3.send(new HeadObjectCommand({ Bucket: 'meta', Key: 'a/obj.bin' }))
  t.equal(unquote(head.ETag), md5(body))
  t.equal(head.ContentType, 'image/x-test')
  t.same(head.Metadata, { owner: 'alice', 'two-words': 'x y' }, 'metadata round trip')
  // Another door (here the disk) rewrites the file.
  writeFileSync(join(gw.root, 'meta/a/obj.bin'), 'changed elsewhere')
  const after = await s3.send(new HeadObjectCommand({ Bucket: 'meta', Key: 'a/obj.bin' }))
  t.match(unquote(after.ETag), /^[0-9a-f]{32}-1$/, 'a stable ETag in the multipart shape')
  t.not(unquote(after.ETag), md5(Buffer.from('changed elsewhere')), 'never claimed as the MD5')
  t.same(after.Metadata ?? {}, {}, 'the old metadata is not served for other bytes')
  t.equal(unquote((await s3.send(new HeadObjectCommand({ Bucket: 'meta', Key: 'a/obj.bin' }))).ETag), unquote(after.ETag), 'stable')
})
