/**
 * Upload-only logins at the S3 gateway with real clients (the aws CLI, boto3): a gateway
 * user with can_upload and can_create_file but no can_read, and a key that narrows a
 * full user to those bits. New objects go up (PutObject, and the CLI's multipart upload
 * of a large file); GetObject, HeadObject, listings, DeleteObject and a PutObject over
 * an existing object are AccessDenied (403) and change nothing (docs/gateways.md,
 * "Permissions").
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { awsCli } from '../../helpers/aws-cli.js'
import { runBoto3 } from '../../helpers/boto3.js'
import { startS3Gateway } from './fixture.js'

const UPLOAD_ONLY = { can_upload: true, can_create_file: true }

t.test('an upload-only user puts objects with the aws CLI and boto3, and reads nothing', async (t) => {
  const gw = await startS3Gateway(t)
  gw.mkdir('drop')
  gw.put('drop/secret.txt', 'not for the uploader')
  const key = await gw.addUser('uploader', { permissions: UPLOAD_ONLY })
  const login = { endpoint: gw.endpoint, ...key }
  const dir = t.testdir()
  const small = randomBytes(1000)
  const large = randomBytes(9 * 1024 * 1024 + 5) // over the CLI's 8 MiB threshold: a multipart upload
  writeFileSync(join(dir, 'small.bin'), small)
  writeFileSync(join(dir, 'large.bin'), large)

  gw.mkdir('drop/in')
  const cp = await awsCli(login, dir, ['s3', 'cp', join(dir, 'small.bin'), 's3://drop/in/small.bin'])
  t.equal(cp.code, 0, `aws s3 cp (PutObject) works: ${cp.stderr}`)
  t.same(readFileSync(join(gw.root, 'drop', 'in', 'small.bin')), small, 'the object, byte for byte')
  // A key under a prefix that is no folder yet makes one: that needs can_create_directory.
  const newPrefix = await awsCli(login, dir, ['s3', 'cp', join(dir, 'small.bin'), 's3://drop/new/small.bin'])
  t.not(newPrefix.code, 0, 'a key under a new prefix: refused')
  t.match(newPrefix.stderr, /AccessDenied.*can_create_directory/, newPrefix.stderr.trim())
  const mp = await awsCli(login, dir, ['s3', 'cp', join(dir, 'large.bin'), 's3://drop/large.bin'])
  t.equal(mp.code, 0, `aws s3 cp of 9 MiB (multipart) works: ${mp.stderr}`)
  t.same(readFileSync(join(gw.root, 'drop', 'large.bin')), large, 'the multipart object, byte for byte')
  const boto = await runBoto3(login, `s3.put_object(Bucket='drop', Key='boto.txt', Body=b'from boto3')\nprint('ok')`)
  t.equal(boto.code, 0, `boto3 put_object works: ${boto.stderr}`)
  t.equal(readFileSync(join(gw.root, 'drop', 'boto.txt'), 'utf8'), 'from boto3')

  const refusals: [string, string[]][] = [
    ['GetObject', ['s3api', 'get-object', '--bucket', 'drop', '--key', 'secret.txt', join(dir, 'got.txt')]],
    ['HeadObject', ['s3api', 'head-object', '--bucket', 'drop', '--key', 'secret.txt']],
    ['ListObjectsV2', ['s3api', 'list-objects-v2', '--bucket', 'drop']],
    ['ListBuckets', ['s3api', 'list-buckets']],
    ['DeleteObject', ['s3api', 'delete-object', '--bucket', 'drop', '--key', 'secret.txt']],
    ['PutObject over an existing object', ['s3api', 'put-object', '--bucket', 'drop', '--key', 'secret.txt', '--body', join(dir, 'small.bin')]],
  ]
  for (const [what, args] of refusals) {
    const r = await awsCli(login, dir, args)
    t.not(r.code, 0, `${what}: refused`)
    t.match(r.stderr, /AccessDenied|403|Forbidden/, `${what}: ${r.stderr.trim()}`)
  }
  const botoGet = await runBoto3(login, `
try:
    s3.get_object(Bucket='drop', Key='secret.txt')
    print('read')
except s3.exceptions.ClientError as e:
    print(e.response['Error']['Code'], e.response['ResponseMetadata']['HTTPStatusCode'])`)
  t.equal(botoGet.stdout.trim(), 'AccessDenied 403', `boto3 get_object: AccessDenied (${botoGet.stderr})`)
  t.same(readdirSync(dir).sort(), ['aws-config', 'large.bin', 'small.bin'], 'nothing was downloaded')
  t.equal(readFileSync(join(gw.root, 'drop', 'secret.txt'), 'utf8'), 'not for the uploader', 'the existing object is intact')
  t.same(readdirSync(join(gw.root, 'drop')).sort(), ['boto.txt', 'in', 'large.bin', 'secret.txt'])
})

t.test('a key narrows its user: a full user\'s upload-only key uploads and reads nothing; its other key reads', async (t) => {
  const gw = await startS3Gateway(t)
  gw.mkdir('b')
  gw.put('b/old.txt', 'old')
  const narrow = await gw.addUser('both', { keyPermissions: UPLOAD_ONLY })
  const dir = t.testdir()
  writeFileSync(join(dir, 'n.txt'), 'new')
  const login = { endpoint: gw.endpoint, ...narrow }
  const put = await awsCli(login, dir, ['s3api', 'put-object', '--bucket', 'b', '--key', 'n.txt', '--body', join(dir, 'n.txt')])
  t.equal(put.code, 0, `the narrowed key uploads: ${put.stderr}`)
  const get = await awsCli(login, dir, ['s3api', 'get-object', '--bucket', 'b', '--key', 'old.txt', join(dir, 'got.txt')])
  t.not(get.code, 0, 'the narrowed key reads nothing')
  t.match(get.stderr, /AccessDenied|403|Forbidden/)
  // Another user's key that narrows nothing reads what the first one wrote.
  const full = await gw.addUser('reader', {})
  const read = await awsCli({ endpoint: gw.endpoint, ...full }, dir, ['s3api', 'get-object', '--bucket', 'b', '--key', 'n.txt', join(dir, 'got.txt')])
  t.equal(read.code, 0, `a key without narrowing reads: ${read.stderr}`)
  t.equal(readFileSync(join(dir, 'got.txt'), 'utf8'), 'new')
})
