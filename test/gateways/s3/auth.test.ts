/**
 * @module test/gateways/s3/auth.test
 * S3 authentication (gateways/s3/auth) driven by real clients against an endpoint that
 * echoes what it authenticated and decoded (test/helpers/s3-echo.ts): the AWS SDK v3
 * (its default checksums: aws-chunked bodies with a CRC32 trailer; and signed payloads),
 * presigned URLs from @smithy/signature-v4 and from boto3, the aws CLI; and every way a
 * request can be wrong: secret, signed header, query or body changed, chunks replayed
 * out of order, a bad trailer checksum, an expired URL, a skewed clock, an unknown or
 * revoked key, and the throttle after ten failures.
 */
import { createHash, createHmac } from 'node:crypto'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { promisify } from 'node:util'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import { SignatureV4 } from '@smithy/signature-v4'
import t from 'tap'
import { type S3Echo, s3Echo } from '../../helpers/s3-echo.js'

const run = promisify(execFile)
const sha = (d: Uint8Array | string) => createHash('sha256').update(d).digest('hex')

function client(echo: S3Echo, creds: { accessKeyId: string; secretAccessKey: string }, extra: Record<string, unknown> = {}) {
  const c = new S3Client({ endpoint: echo.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: creds, maxAttempts: 1, ...extra })
  return c
}

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

t.test('the AWS SDK v3: default checksums (aws-chunked, CRC32 trailer), signed payloads, reads', async (t) => {
  const echo = await s3Echo(t)
  const creds = await echo.key('alice')
  const s3 = client(echo, creds)
  t.teardown(() => s3.destroy())
  const data = Buffer.alloc(300_000, 'x')
  data.write('the start', 0)

  await s3.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: Readable.from([data.subarray(0, 100_000), data.subarray(100_000)]), ContentLength: data.byteLength }))
  t.match(echo.seen.at(-1), { user: 'alice', accessKeyId: creds.accessKeyId, readOnly: false, mode: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', length: data.byteLength, sha256: sha(data), contentLength: data.byteLength }, 'a stream: aws-chunked with a trailer, decoded')

  await s3.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: data }))
  t.match(echo.seen.at(-1), { user: 'alice', mode: sha(data), length: data.byteLength, sha256: sha(data) }, 'a buffer: a signed payload (and its CRC32 in a header)')

  const signed = client(echo, creds, { requestChecksumCalculation: 'WHEN_REQUIRED' })
  t.teardown(() => signed.destroy())
  await signed.send(new PutObjectCommand({ Bucket: 'b', Key: 'a key/with spaces+plus=&?#é', Body: data, ContentMD5: createHash('md5').update(data).digest('base64') }))
  t.match(echo.seen.at(-1), { mode: sha(data), length: data.byteLength, sha256: sha(data) }, 'a signed payload with Content-MD5, under a key that needs encoding')

  const got = await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))
  t.match(JSON.parse(await got.Body!.transformToString()), { user: 'alice', length: 0 }, 'a GET')
  await s3.send(new ListObjectsV2Command({ Bucket: 'b', Prefix: 'a/b c', Delimiter: '/', StartAfter: 'x~y', MaxKeys: 10 }))
  t.match(echo.seen.at(-1), { user: 'alice' }, 'a listing with query parameters that need encoding')

  const ro = await echo.key('reader', { readOnly: true })
  const reader = client(echo, ro)
  t.teardown(() => reader.destroy())
  await reader.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))
  t.match(echo.seen.at(-1), { user: 'reader', readOnly: true }, "a read-only user's key gets a read-only view")

  const wrong = client(echo, { ...creds, secretAccessKey: `${creds.secretAccessKey.slice(0, -1)}X` })
  t.teardown(() => wrong.destroy())
  t.equal(await failure(wrong.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))), 'SignatureDoesNotMatch', 'a wrong secret')
  const unknown = client(echo, { accessKeyId: 'FGAAAAAAAAAAAAAAAAAA', secretAccessKey: creds.secretAccessKey })
  t.teardown(() => unknown.destroy())
  t.equal(await failure(unknown.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))), 'InvalidAccessKeyId', 'an unknown key')
  echo.skewMs = 20 * 60_000
  t.equal(await failure(s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))), 'RequestTimeTooSkewed', 'a clock 20 minutes off')
  echo.skewMs = 0
})
