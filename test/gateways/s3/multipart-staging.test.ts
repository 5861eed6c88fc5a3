/**
 * S3 multipart parts on the server's disk are bounded (issue 23, item 8). The attack:
 * one key staging parts of uploads it never completes, as fast as loopback carries
 * them, into the data folder that also holds the state store. Now the key's user stops
 * at its login limit with EntityTooLarge (answered before the part's body is read),
 * other users are served, the server's total answers InsufficientStorage (507), and an
 * abort gives the room back. Real clients: the AWS SDK v3 (with its default checksums,
 * aws-chunked bodies) and boto3.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import t from 'tap'
import { api, startTestServer } from '../../helpers/filegate.js'
import { s3Client } from '../../helpers/s3-client.js'
import { ADMIN_PASSWORD, adminToken } from '../../helpers/share.js'
import { requireBinary } from '../../servers/process.js'
import { runCommand } from '../sftp/clients.js'

const MiB = 1024 * 1024
requireBinary('/usr/lib/python3/dist-packages/boto3', 'python3-boto3')

/** The S3 error a command failed with: its code and HTTP status. */
async function failure(p: Promise<unknown>): Promise<{ name: string; status: number | undefined; message: string }> {
  try {
    await p
  } catch (err) {
    if (err instanceof S3ServiceException) return { name: err.name, status: err.$metadata.httpStatusCode, message: err.message }
    throw err
  }
  return { name: 'no error', status: 200, message: '' }
}

/** Bytes in the multipart staging folder, every upload's parts together. */
function stagedBytes(dataDir: string): number {
  const dir = join(dataDir, 's3-multipart')
  if (!existsSync(dir)) return 0
  let n = 0
  for (const up of readdirSync(dir)) for (const f of readdirSync(join(dir, up))) n += statSync(join(dir, up, f)).size
  return n
}

t.test('one key staging parts it never completes stops at its limit; others are served; the total answers 507; an abort gives the room back', async (t) => {
  const limits = { per_login_bytes: 12 * MiB, total_bytes: 18 * MiB, reserve_bytes: 0 }
  const { app, url } = await startTestServer(t, { s3: { port: 0 }, admin_password: ADMIN_PASSWORD, shutdown_grace_seconds: 1, staging_limits: limits })
  const admin = api(url, await adminToken(url))
  const keyOf = async (name: string) => {
    const made = await admin('POST', '/admin/api/users', {}, { body: JSON.stringify({ name, password: `${name}-password-1`, connection: 'tmp' }) })
    if (made.status !== 200) throw new Error(await made.text())
    const k = ((await (await admin('POST', `/admin/api/users/${name}/s3-keys`)).json()) as { result: { access_key_id: string; secret_access_key: string } }).result
    return { accessKeyId: k.access_key_id, secretAccessKey: k.secret_access_key }
  }
  const endpoint = `http://127.0.0.1:${app.gateways.find((g) => g.name === 's3')!.port}`
  const mallory = s3Client(t, endpoint, await keyOf('mallory'), { checksums: 'default', maxAttempts: 1 })
  const alice = s3Client(t, endpoint, await keyOf('alice'), { checksums: 'default', maxAttempts: 1 })
  await mallory.send(new CreateBucketCommand({ Bucket: 'junk' }))
  await alice.send(new CreateBucketCommand({ Bucket: 'docs' }))

  // The attack: parts of 5 MiB into uploads never completed, until refused.
  const part = randomBytes(5 * MiB)
  const uploads: string[] = []
  let refused: Awaited<ReturnType<typeof failure>> | null = null
  for (let i = 0; i < 20 && refused === null; i++) {
    const { UploadId } = await mallory.send(new CreateMultipartUploadCommand({ Bucket: 'junk', Key: `j${i}.bin` }))
    uploads.push(UploadId!)
    const r = await failure(mallory.send(new UploadPartCommand({ Bucket: 'junk', Key: `j${i}.bin`, UploadId, PartNumber: 1, Body: part })))
    if (r.name !== 'no error') refused = r
  }
  t.equal(uploads.length, 3, 'two parts of 5 MiB are staged, the third is refused')
  t.match(refused, { name: 'EntityTooLarge', status: 400, message: /staged uploads would be over their limit \(12582912 bytes\)/ }, 'EntityTooLarge, saying which limit')
  t.equal(stagedBytes(app.config.data_dir), 10 * MiB, 'nothing of the refused part is staged')

  // Another user is served: a whole multipart upload, read back.
  const { UploadId } = await alice.send(new CreateMultipartUploadCommand({ Bucket: 'docs', Key: 'report.bin' }))
  const p1 = await alice.send(new UploadPartCommand({ Bucket: 'docs', Key: 'report.bin', UploadId, PartNumber: 1, Body: part }))
  const p2 = await alice.send(new UploadPartCommand({ Bucket: 'docs', Key: 'report.bin', UploadId, PartNumber: 2, Body: Buffer.from('the end') }))
  await alice.send(new CompleteMultipartUploadCommand({ Bucket: 'docs', Key: 'report.bin', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag }, { PartNumber: 2, ETag: p2.ETag }] } }))
  const got = Buffer.from(await (await alice.send(new GetObjectCommand({ Bucket: 'docs', Key: 'report.bin' }))).Body!.transformToByteArray())
  t.ok(got.equals(Buffer.concat([part, Buffer.from('the end')])), "another user's multipart upload is stored, byte-exact")

  // The total (18 MiB): mallory holds 10; alice stages 5 more, the next part is past the server's room.
  const { UploadId: second } = await alice.send(new CreateMultipartUploadCommand({ Bucket: 'docs', Key: 'next.bin' }))
  await alice.send(new UploadPartCommand({ Bucket: 'docs', Key: 'next.bin', UploadId: second, PartNumber: 1, Body: part }))
  const full = await failure(alice.send(new UploadPartCommand({ Bucket: 'docs', Key: 'next.bin', UploadId: second, PartNumber: 2, Body: part })))
  t.match(full, { name: 'InsufficientStorage', status: 507, message: /room for staged uploads is full/ }, 'past the total: InsufficientStorage, 507')

  // A part sent again replaces the old one (both are on disk until the swap): it counts once.
  await alice.send(new UploadPartCommand({ Bucket: 'docs', Key: 'next.bin', UploadId: second, PartNumber: 1, Body: randomBytes(2 * MiB) }))
  t.equal(stagedBytes(app.config.data_dir), 10 * MiB + 2 * MiB, 'a replaced part is given back')

  // Aborting gives the room back.
  for (const [i, id] of uploads.entries()) await mallory.send(new AbortMultipartUploadCommand({ Bucket: 'junk', Key: `j${i}.bin`, UploadId: id }))
  t.equal(stagedBytes(app.config.data_dir), 2 * MiB, "nothing of mallory's uploads is left")
  const { UploadId: again } = await mallory.send(new CreateMultipartUploadCommand({ Bucket: 'junk', Key: 'again.bin' }))
  for (const PartNumber of [1, 2]) await t.resolves(mallory.send(new UploadPartCommand({ Bucket: 'junk', Key: 'again.bin', UploadId: again, PartNumber, Body: part })), 'mallory may stage again')

  // boto3 sees the same refusal as a ClientError it can read.
  const keys = await keyOf('bob')
  const { AWS_CA_BUNDLE: _, ...env } = process.env
  const py = await runCommand('/usr/bin/python3', ['-c', String.raw`
import boto3, botocore, os
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['EP'], aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'], region_name='us-east-1', config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
s3.create_bucket(Bucket='bobs-bucket')
up = s3.create_multipart_upload(Bucket='bobs-bucket', Key='k')['UploadId']
body = os.urandom(5 * 1024 * 1024)
for n in range(1, 5):
    try:
        s3.upload_part(Bucket='bobs-bucket', Key='k', UploadId=up, PartNumber=n, Body=body)
        print('stored', n)
    except botocore.exceptions.ClientError as e:
        print('refused', n, e.response['Error']['Code'], e.response['ResponseMetadata']['HTTPStatusCode'])
        break
`], { env: { ...env, EP: endpoint, AK: keys.accessKeyId, SK: keys.secretAccessKey }, timeoutMs: 120_000 })
  t.equal(py.code, 0, py.stderr)
  t.equal(py.stdout, 'stored 1\nrefused 2 InsufficientStorage 507\n', 'boto3: the total (alice 2 MiB and mallory 10 staged, bob 5), as InsufficientStorage 507')
})
