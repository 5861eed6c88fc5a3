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
import { crc32 as zlibCrc32 } from 'node:zlib'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import { SignatureV4 } from '@smithy/signature-v4'
import { Sha256 } from '../../../gateways/s3/auth/sigv4.js'
import t from 'tap'
import { type S3Echo, s3Echo } from '../../helpers/s3-echo.js'

const run = promisify(execFile)
const sha = (d: Uint8Array | string) => createHash('sha256').update(d).digest('hex')
/** The secret with its last character changed (always to another one). */
const otherSecret = (s: string) => `${s.slice(0, -1)}${s.endsWith('X') ? 'Y' : 'X'}`

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
    return `not an S3 error: ${String(err)}`
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

  const wrong = client(echo, { ...creds, secretAccessKey: otherSecret(creds.secretAccessKey) })
  t.teardown(() => wrong.destroy())
  t.equal(await failure(wrong.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))), 'SignatureDoesNotMatch', 'a wrong secret')
  const unknown = client(echo, { accessKeyId: 'FGAAAAAAAAAAAAAAAAAA', secretAccessKey: creds.secretAccessKey })
  t.teardown(() => unknown.destroy())
  t.equal(await failure(unknown.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))), 'InvalidAccessKeyId', 'an unknown key')
  echo.skewMs = 20 * 60_000
  t.equal(await failure(s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }))), 'RequestTimeTooSkewed', 'a clock 20 minutes off')
  echo.skewMs = 0
})


interface Req {
  method: string
  path: string
  query?: Record<string, string>
  headers?: Record<string, string>
  body?: Buffer
}

/** A request signed by @smithy/signature-v4 as a client signs it (the payload hash is the body's unless given). */
async function sign(echo: S3Echo, creds: { accessKeyId: string; secretAccessKey: string }, r: Req, signingDate = new Date()) {
  const host = new URL(echo.endpoint).host
  const headers = { host, 'x-amz-content-sha256': sha(r.body ?? ''), ...r.headers }
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: creds, sha256: Sha256, uriEscapePath: false })
  const s = await signer.sign({ method: r.method, protocol: 'http:', hostname: '127.0.0.1', path: r.path, query: r.query ?? {}, headers }, { signingDate })
  return { ...r, headers: s.headers as Record<string, string> }
}

/** Sends a request; its S3 error code (or 'ok'). */
async function send(echo: S3Echo, r: Req): Promise<{ status: number; code: string; text: string }> {
  const qs = new URLSearchParams(r.query ?? {}).toString().replace(/\+/g, '%20')
  const headers = Object.fromEntries(Object.entries(r.headers ?? {}).filter(([k]) => k !== 'host'))
  const res = await fetch(`${echo.endpoint}${r.path}${qs ? `?${qs}` : ''}`, { method: r.method, headers, body: r.body ? new Uint8Array(r.body) : null })
  const text = await res.text()
  return { status: res.status, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? 'ok', text }
}

const hmac = (k: string | Uint8Array, d: string) => createHmac('sha256', k).update(d).digest()
function chunkKey(secret: string, date: string): Buffer {
  let k = hmac(`AWS4${secret}`, date)
  for (const s of ['us-east-1', 's3', 'aws4_request']) k = hmac(k, s)
  return k
}

/** An aws-chunked body: signed chunks (chained from `seed`) when `key` is given, with a trailer when `trailer` is. */
function awsChunked(parts: Buffer[], opts: { key?: Buffer; seed?: string; date?: string; trailer?: string }): Buffer {
  const scope = `${opts.date?.slice(0, 8)}/us-east-1/s3/aws4_request`
  let prev = opts.seed ?? ''
  const out: Buffer[] = []
  for (const p of [...parts, Buffer.alloc(0)]) {
    let ext = ''
    if (opts.key) {
      const sig = hmac(opts.key, ['AWS4-HMAC-SHA256-PAYLOAD', opts.date, scope, prev, sha(''), sha(p)].join('\n')).toString('hex')
      ext = `;chunk-signature=${sig}`
      prev = sig
    }
    out.push(Buffer.from(`${p.byteLength.toString(16)}${ext}\r\n`), p)
    if (p.byteLength > 0 || opts.trailer === undefined) out.push(Buffer.from('\r\n'))
  }
  if (opts.trailer !== undefined) {
    out.push(Buffer.from(`${opts.trailer}\r\n`))
    if (opts.key) out.push(Buffer.from(`x-amz-trailer-signature:${hmac(opts.key, ['AWS4-HMAC-SHA256-TRAILER', opts.date, scope, prev, sha(`${opts.trailer}\n`)].join('\n')).toString('hex')}\r\n`))
    out.push(Buffer.from('\r\n'))
  }
  return Buffer.concat(out)
}

const crc32 = (d: Buffer) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(zlibCrc32(d))
  return b.toString('base64')
}

t.test('signed requests changed in transit, and payloads that do not match what was signed', async (t) => {
  const echo = await s3Echo(t)
  const creds = await echo.key('alice')
  const body = Buffer.from('hello, world')

  const put = await sign(echo, creds, { method: 'PUT', path: '/b/k', headers: { 'x-amz-meta-color': 'blue' }, body })
  t.match(await send(echo, put), { status: 200, code: 'ok' }, 'as signed')
  t.match(await send(echo, { ...put, headers: { ...put.headers, 'x-amz-meta-color': 'red' } }), { status: 403, code: 'SignatureDoesNotMatch' }, 'a signed header changed')
  t.match(await send(echo, { ...put, path: '/b/other' }), { status: 403, code: 'SignatureDoesNotMatch' }, 'the path changed')
  t.match(await send(echo, { ...put, body: Buffer.from('hello, worle') }), { status: 400, code: 'XAmzContentSHA256Mismatch' }, 'the body changed')
  const added = await send(echo, { ...put, headers: { ...put.headers, 'x-amz-copy-source': '/other/secret.txt' } })
  t.match(added, { status: 403, code: 'AccessDenied' }, 'an x-amz-* header added that was not signed')
  t.match(added.text, '<HeadersNotSigned>x-amz-copy-source</HeadersNotSigned>')
  t.match(await send(echo, { ...put, headers: { ...put.headers, 'x-amz-meta-__proto__': 'x' } }), { status: 403, code: 'AccessDenied' }, 'one named __proto__')

  const list = await sign(echo, creds, { method: 'GET', path: '/b', query: { 'list-type': '2', prefix: 'a b/' } })
  t.match(await send(echo, list), { status: 200 }, 'a query as signed')
  t.match(await send(echo, { ...list, query: { 'list-type': '2', prefix: 'a c/' } }), { status: 403, code: 'SignatureDoesNotMatch' }, 'a query parameter changed')
  t.match(await send(echo, { ...list, query: { ...list.query, 'max-keys': '1' } }), { status: 403, code: 'SignatureDoesNotMatch' }, 'a query parameter added')

  const md5 = createHash('md5').update(body).digest('base64')
  t.match(await send(echo, await sign(echo, creds, { method: 'PUT', path: '/b/k', headers: { 'content-md5': md5 }, body })), { status: 200 }, 'the right Content-MD5')
  const wrongMd5 = createHash('md5').update('other').digest('base64')
  t.match(await send(echo, await sign(echo, creds, { method: 'PUT', path: '/b/k', headers: { 'content-md5': wrongMd5 }, body })), { status: 400, code: 'BadDigest' }, 'a wrong Content-MD5')
  t.match(await send(echo, await sign(echo, creds, { method: 'PUT', path: '/b/k', headers: { 'content-md5': 'not base64' }, body })), { status: 400, code: 'InvalidDigest' }, 'a malformed Content-MD5')
  const unsigned = await sign(echo, creds, { method: 'PUT', path: '/b/k', headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-amz-checksum-sha256': createHash('sha256').update('x').digest('base64') }, body })
  t.match(await send(echo, unsigned), { status: 400, code: 'BadDigest' }, 'an unsigned payload whose x-amz-checksum-sha256 header does not match')

  t.match(await send(echo, { method: 'GET', path: '/b/k' }), { status: 403, code: 'AccessDenied' }, 'anonymous')
  t.match(await send(echo, { method: 'GET', path: '/b/k', headers: { authorization: 'AWS FGAAAAAAAAAAAAAAAAAA:c2lnbmF0dXJl' } }), { status: 400, code: 'InvalidRequest' }, 'Signature Version 2')
  t.match(await send(echo, { method: 'GET', path: '/b/k', headers: { authorization: 'AWS4-HMAC-SHA256 Credential=x' } }), { status: 400, code: 'AuthorizationHeaderMalformed' }, 'a malformed header')
})

t.test('aws-chunked payloads: chunk signatures chained, trailers checked, hostile framing refused', async (t) => {
  const echo = await s3Echo(t)
  const creds = await echo.key('alice')
  const parts = [Buffer.alloc(8192, 'a'), Buffer.alloc(8192, 'b'), Buffer.alloc(100, 'c')]
  const data = Buffer.concat(parts)
  const streaming = async (mode: string, extra: Record<string, string> = {}) => {
    const r = await sign(echo, creds, { method: 'PUT', path: '/b/k', headers: { 'x-amz-content-sha256': mode, 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(data.byteLength), ...extra } })
    const seed = /Signature=([0-9a-f]{64})/.exec(r.headers.authorization!)![1]!
    const date = r.headers['x-amz-date']!
    return { r, seed, date, key: chunkKey(creds.secretAccessKey, date.slice(0, 8)) }
  }

  const s = await streaming('STREAMING-AWS4-HMAC-SHA256-PAYLOAD')
  t.match(await send(echo, { ...s.r, body: awsChunked(parts, s) }), { status: 200 }, 'signed chunks')
  t.match(echo.seen.at(-1), { length: data.byteLength, sha256: sha(data), contentLength: data.byteLength }, 'decoded')
  // The chunks as framed and signed, replayed in another order.
  const framed = awsChunked(parts, s)
  const [c1, c2] = [framed.subarray(0, framed.indexOf('\r\n') + 2 + 8192 + 2), framed.subarray(framed.indexOf('\r\n') + 2 + 8192 + 2)]
  const c2len = c2.indexOf('\r\n') + 2 + 8192 + 2
  const replayed = Buffer.concat([c2.subarray(0, c2len), c1, c2.subarray(c2len)])
  t.equal(replayed.byteLength, framed.byteLength)
  t.match(await send(echo, { ...s.r, body: replayed }), { status: 403, code: 'SignatureDoesNotMatch' }, 'signed chunks replayed in another order')
  const good = awsChunked(parts, s)
  const a = good.indexOf('\r\n') + 2
  const swapped = Buffer.concat([good.subarray(0, a), Buffer.alloc(8192, 'b'), good.subarray(a + 8192)])
  t.match(await send(echo, { ...s.r, body: swapped }), { status: 403, code: 'SignatureDoesNotMatch' }, "a chunk's data replaced")
  t.match(await send(echo, { ...s.r, body: awsChunked(parts, { ...s, key: chunkKey(otherSecret(creds.secretAccessKey), s.date.slice(0, 8)) }) }), { status: 403, code: 'SignatureDoesNotMatch' }, 'chunks signed with another secret')

  const st = await streaming('STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', { 'x-amz-trailer': 'x-amz-checksum-crc32' })
  t.match(await send(echo, { ...st.r, body: awsChunked(parts, { ...st, trailer: `x-amz-checksum-crc32:${crc32(data)}` }) }), { status: 200 }, 'signed chunks and a signed CRC32 trailer')
  const forged = awsChunked(parts, { ...st, trailer: `x-amz-checksum-crc32:${crc32(data)}` }).toString('latin1').replace(/x-amz-trailer-signature:[0-9a-f]{64}/, `x-amz-trailer-signature:${'0'.repeat(64)}`)
  t.match(await send(echo, { ...st.r, body: Buffer.from(forged, 'latin1') }), { status: 403, code: 'SignatureDoesNotMatch' }, 'a trailer signature that does not match')

  const u = await streaming('STREAMING-UNSIGNED-PAYLOAD-TRAILER', { 'x-amz-trailer': 'x-amz-checksum-crc32' })
  t.match(await send(echo, { ...u.r, body: awsChunked(parts, { trailer: `x-amz-checksum-crc32:${crc32(data)}` }) }), { status: 200 }, 'unsigned chunks, CRC32 trailer')
  t.match(await send(echo, { ...u.r, body: awsChunked(parts, { trailer: `x-amz-checksum-crc32:${crc32(Buffer.from('other'))}` }) }), { status: 400, code: 'BadDigest' }, 'a CRC32 trailer that does not match')
  t.match(await send(echo, { ...u.r, body: awsChunked(parts.slice(0, 2), { trailer: `x-amz-checksum-crc32:${crc32(data)}` }) }), { status: 400, code: 'IncompleteBody' }, 'fewer bytes than x-amz-decoded-content-length')
  t.match(await send(echo, { ...u.r, body: Buffer.from('fffffffffffff\r\naaaa') }), { status: 400, code: 'InvalidChunkSizeError' }, 'a chunk size past the declared length')
  t.match(await send(echo, { ...u.r, body: Buffer.from(`${'1'.repeat(5000)}\r\n`) }), { status: 400, code: 'InvalidChunkSizeError' }, 'a size line of 5,000 digits')
  t.match(await send(echo, { ...u.r, body: awsChunked(parts, {}) }), { status: 400, code: 'MalformedTrailerError' }, 'no trailer')
  for (const [name, sum] of [
    ['crc32c', Buffer.from(new Uint32Array([0]).buffer).toString('base64')],
    ['sha1', createHash('sha1').update(data).digest('base64')],
    ['sha256', createHash('sha256').update(data).digest('base64')],
  ] as const) {
    const c = await streaming('STREAMING-UNSIGNED-PAYLOAD-TRAILER', { 'x-amz-trailer': `x-amz-checksum-${name}` })
    const want = name === 'crc32c' ? 'BadDigest' : 'ok'
    t.match(await send(echo, { ...c.r, body: awsChunked(parts, { trailer: `x-amz-checksum-${name}:${sum}` }) }), { code: want }, `a ${name} trailer (${want === 'ok' ? 'right' : 'wrong'})`)
  }
})

t.test('presigned URLs: @smithy/signature-v4 and boto3 make them; changed, expired or too long ones are refused', async (t) => {
  const echo = await s3Echo(t)
  const creds = await echo.key('alice')
  const host = new URL(echo.endpoint).host
  const signer = new SignatureV4({ service: 's3', region: 'us-east-1', credentials: creds, sha256: Sha256, uriEscapePath: false })
  const presign = async (method: string, path: string, opts: { expiresIn?: number; signingDate?: Date } = {}) => {
    const r = await signer.presign({ method, protocol: 'http:', hostname: '127.0.0.1', path, query: {}, headers: { host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }, opts)
    return { method, path, query: r.query as Record<string, string> }
  }
  const get = await presign('GET', '/b/a%20key')
  t.match(await send(echo, get), { status: 200 }, 'a presigned GET')
  t.match(echo.seen.at(-1), { user: 'alice', accessKeyId: creds.accessKeyId })
  const body = Buffer.from('uploaded through a presigned URL')
  t.match(await send(echo, { ...(await presign('PUT', '/b/up')), body }), { status: 200 }, 'a presigned PUT')
  t.match(echo.seen.at(-1), { length: body.byteLength, sha256: sha(body) })
  t.match(await send(echo, { ...get, path: '/b/another' }), { status: 403, code: 'SignatureDoesNotMatch' }, 'used for another key')
  t.match(await send(echo, { ...get, query: { ...get.query, 'X-Amz-Expires': '604800' } }), { status: 403, code: 'SignatureDoesNotMatch' }, 'its expiry lengthened')
  t.match(await send(echo, { ...get, query: { ...get.query, 'X-Amz-Expires': '604801' } }), { status: 400, code: 'AuthorizationQueryParametersError' }, 'more than seven days')
  const old = await presign('GET', '/b/k', { expiresIn: 60, signingDate: new Date(Date.now() - 120_000) })
  const expired = await send(echo, old)
  t.match(expired, { status: 403, code: 'AccessDenied' }, 'expired')
  t.match(expired.text, '<Message>Request has expired</Message>')
  const { 'X-Amz-Signature': _, ...unsigned } = get.query
  t.match(await send(echo, { ...get, query: unsigned }), { status: 400, code: 'AuthorizationQueryParametersError' }, 'without its signature')

  // boto3 (Debian's python3-boto3), as an application makes presigned URLs.
  const py = `
import sys, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='us-east-1',
                  config=Config(signature_version='s3v4', s3={'addressing_style': 'path'}))
print(s3.generate_presigned_url('get_object', Params={'Bucket': 'b', 'Key': 'dir/ünïcode key.txt'}, ExpiresIn=300))
print(s3.generate_presigned_url('put_object', Params={'Bucket': 'b', 'Key': 'up.bin'}, ExpiresIn=300))
`
  const { stdout } = await run('/usr/bin/python3', ['-c', py, echo.endpoint, creds.accessKeyId, creds.secretAccessKey], { env: { PATH: '/usr/bin:/bin', HOME: t.testdir() } })
  const [bGet, bPut] = stdout.trim().split('\n') as [string, string]
  t.equal((await fetch(bGet)).status, 200, 'a boto3 presigned GET')
  const up = await fetch(bPut, { method: 'PUT', body: new Uint8Array(body) })
  t.equal(up.status, 200, 'a boto3 presigned PUT')
  t.match(echo.seen.at(-1), { user: 'alice', length: body.byteLength, sha256: sha(body) })
  const tampered = bGet.replace(/X-Amz-Signature=([0-9a-f])/, (_, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`)
  t.not(tampered, bGet)
  const refused = await fetch(tampered)
  t.equal(refused.status, 403, 'a boto3 URL with its signature tampered with')
  t.match(await refused.text(), '<Code>SignatureDoesNotMatch</Code>')
})

t.test('the aws CLI: s3api put-object and get-object', async (t) => {
  const echo = await s3Echo(t)
  const creds = await echo.key('alice')
  const dir = t.testdir()
  const file = join(dir, 'up.bin')
  const data = Buffer.alloc(200_000, 7)
  writeFileSync(file, data)
  const env = { PATH: '/usr/bin:/bin', HOME: dir, AWS_ACCESS_KEY_ID: creds.accessKeyId, AWS_SECRET_ACCESS_KEY: creds.secretAccessKey, AWS_DEFAULT_REGION: 'us-east-1', AWS_CONFIG_FILE: join(dir, 'none'), AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none') }
  const aws = (...args: string[]) => run('/usr/bin/aws', ['--endpoint-url', echo.endpoint, ...args], { env })
  await aws('s3api', 'put-object', '--bucket', 'b', '--key', 'dir/a file.bin', '--body', file)
  t.match(echo.seen.at(-1), { user: 'alice', length: data.byteLength, sha256: sha(data) }, `put-object (${echo.seen.at(-1)?.mode?.slice(0, 20)})`)
  await aws('s3api', 'get-object', '--bucket', 'b', '--key', 'dir/a file.bin', join(dir, 'out.json'))
  t.match(echo.seen.at(-1), { user: 'alice', length: 0 }, 'get-object')
  const bad = await aws('s3api', 'get-object', '--bucket', 'b', '--key', 'k', join(dir, 'out2.json')).then(
    () => 'no error',
    (err: { stderr: string }) => err.stderr,
  )
  t.ok(bad === 'no error', 'control')
  env.AWS_SECRET_ACCESS_KEY = otherSecret(creds.secretAccessKey)
  const refused = await aws('s3api', 'get-object', '--bucket', 'b', '--key', 'k', join(dir, 'out3.json')).then(
    () => 'no error',
    (err: { stderr: string }) => err.stderr,
  )
  t.match(refused, 'SignatureDoesNotMatch', 'a wrong secret')
})

t.test('a revoked key is refused at once; ten failures from one address and every login from it is slowed down', async (t) => {
  const echo = await s3Echo(t)
  const creds = await echo.key('alice')
  const get = () => sign(echo, creds, { method: 'GET', path: '/b/k' }).then((r) => send(echo, r))
  t.match(await get(), { status: 200 })
  const list = (await (await echo.admin('GET', '/admin/api/users/alice/s3-keys')).json()) as { results: { access_key_id: string }[] }
  t.same(list.results.map((k) => k.access_key_id), [creds.accessKeyId])
  t.equal((await echo.admin('DELETE', `/admin/api/users/alice/s3-keys/${creds.accessKeyId}`)).status, 200)
  t.match(await get(), { status: 403, code: 'InvalidAccessKeyId' }, 'the next request after the DELETE')
  const fresh = await echo.key('alice')
  const wrong = { ...fresh, secretAccessKey: otherSecret(fresh.secretAccessKey) }
  // Nine more failures (the revoked key's was the first).
  for (let i = 0; i < 9; i++) t.match(await send(echo, await sign(echo, wrong, { method: 'GET', path: '/b/k' })), { code: 'SignatureDoesNotMatch' })
  const slowed = await send(echo, await sign(echo, fresh, { method: 'GET', path: '/b/k' }))
  t.match(slowed, { status: 503, code: 'SlowDown' }, 'then even the right secret is refused from that address')
  const log = JSON.stringify(echo.gate.logs)
  t.ok(log.includes(fresh.accessKeyId), 'logins are logged with their access key id')
  t.notOk(log.includes(fresh.secretAccessKey) || log.includes(creds.secretAccessKey), 'never with a secret')
})
