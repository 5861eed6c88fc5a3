/**
 * s3rver (npm, a filesystem-backed S3 emulator) for tests: on 127.0.0.1 and a free
 * port, data under a temporary folder, credentials S3RVER/S3RVER, path-style.
 *
 * Three gaps of s3rver 3.7 are filled by a preload module (written next to the data,
 * loaded with `--require`):
 * - it does not verify SigV4 signatures at all (any secret works with a known key
 *   id); the preload checks them as S3 does, so a wrong secret is
 *   SignatureDoesNotMatch;
 * - AbortMultipartUpload answers MethodNotAllowed, so an aborted upload's parts
 *   would stay on its disk whatever the client does; the preload serves
 *   DELETE /<bucket>/<key>?uploadId=<id> in front of s3rver's routes, removing the
 *   parts as S3 does. `pendingUploads(bucket)` reads what is left on disk.
 * - continuation tokens are encrypted with single DES, missing from OpenSSL 3's
 *   default provider: every listing longer than a page failed with InternalError.
 * Known s3rver quirks the driver copes with: `Range: bytes=0-0` returns the whole
 * object (the driver trims any excess the server sends).
 *
 * Clients must set `requestChecksumCalculation: 'WHEN_REQUIRED'`: s3rver stores an
 * `aws-chunked` body's framing as data.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Test } from 'tap'
import { freePort, startServer, type Started } from './process.js'

export const S3RVER_KEY = 'S3RVER'

export interface S3rverServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string
  readonly port: number
  readonly accessKeyId: string
  readonly secretAccessKey: string
  /** s3rver's data folder. */
  readonly dir: string
  /** Creates a fresh, empty bucket and returns its name. */
  bucket(): Promise<string>
  /** Multipart uploads of `bucket` that were neither completed nor aborted. */
  pendingUploads(bucket: string): string[]
  /** How many parts of those uploads the server stored (or is storing). */
  storedParts(bucket: string): number
  /** Stops the server (SIGTERM, then SIGKILL). */
  stop(): Promise<void>
  /** Starts it again on the same port and data folder. */
  start(): Promise<void>
}

const require = createRequire(import.meta.url)
const S3RVER_DIR = dirname(require.resolve('s3rver/package.json'))

/** CommonJS preload: AbortMultipartUpload for s3rver (see the module comment). */
const PRELOAD = String.raw`
const crypto = require('node:crypto')
const fs = require('node:fs')
const path = require('node:path')
// s3rver's continuation tokens use single DES, which OpenSSL 3 only has in its legacy
// provider (every truncated listing would fail with InternalError). Triple DES with
// three equal keys is the same cipher, and in the default provider.
for (const name of ['createCipheriv', 'createDecipheriv']) {
  const orig = crypto[name]
  crypto[name] = function (alg, key, iv, ...rest) {
    if (alg === 'des') return orig.call(this, 'des-ede3-cbc', Buffer.concat([key, key, key]), iv, ...rest)
    return orig.call(this, alg, key, iv, ...rest)
  }
}
const S3rver = require(${JSON.stringify(join(S3RVER_DIR, 'lib', 's3rver.js'))})
const run = S3rver.prototype.run
// --- SigV4: s3rver checks only that the access key exists. The same check S3 does:
// rebuild the canonical request from what arrived and compare the signatures.
const SECRETS = { S3RVER: 'S3RVER' }
const enc = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
const dec = (s) => { try { return decodeURIComponent(s) } catch { return s } }
const hmac = (key, data) => crypto.createHmac('sha256', key).update(data).digest()
const sha = (data) => crypto.createHash('sha256').update(data).digest('hex')
function sigV4Mismatch(req) {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(req.headers.authorization || '')
  if (!m) return false // not SigV4 in a header (v2, presigned, anonymous): s3rver's own checks apply
  const [, keyId, day, region, service, signedHeaders, signature] = m
  const secret = SECRETS[keyId]
  if (secret === undefined) return false // s3rver answers InvalidAccessKeyId
  const [rawPath, rawQuery = ''] = req.url.split(/\?(.*)/s)
  const query = rawQuery === '' ? [] : rawQuery.split('&').map((kv) => { const i = kv.indexOf('='); return i < 0 ? [dec(kv), ''] : [dec(kv.slice(0, i)), dec(kv.slice(i + 1))] })
  const canonicalQuery = query.map(([k, v]) => [enc(k), enc(v)]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map(([k, v]) => k + '=' + v).join('&')
  const names = signedHeaders.split(';')
  const headers = names.map((n) => n + ':' + String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ') + '\n').join('')
  const payload = req.headers['x-amz-content-sha256'] || 'UNSIGNED-PAYLOAD'
  const canonical = [req.method, rawPath, canonicalQuery, headers, signedHeaders, payload].join('\n')
  const amzDate = req.headers['x-amz-date'] || ''
  const scope = [day, region, service, 'aws4_request'].join('/')
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha(canonical)].join('\n')
  const key = hmac(hmac(hmac(hmac('AWS4' + secret, day), region), service), 'aws4_request')
  return hmac(key, toSign).toString('hex') !== signature
}

S3rver.prototype.run = function (...args) {
  const root = this.store.rootDirectory
  this.middleware.unshift(async (ctx, next) => {
    const m = /^\/([^/]+)\/./.exec(ctx.path)
    const id = ctx.query.uploadId
    if (ctx.method !== 'DELETE' || !m || typeof id !== 'string') return next()
    const dir = path.join(root, m[1], '._S3rver_uploads', id)
    if (!/^[0-9a-f]+$/.test(id) || !fs.existsSync(dir)) {
      ctx.status = 404
      ctx.type = 'application/xml'
      ctx.body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>'
      return
    }
    await fs.promises.rm(dir, { recursive: true, force: true })
    ctx.status = 204
  })
  // First of all: the signature.
  this.middleware.unshift(async (ctx, next) => {
    if (!sigV4Mismatch(ctx.req)) return next()
    ctx.status = 403
    ctx.type = 'application/xml'
    ctx.body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message></Error>'
  })
  return run.apply(this, args)
}
`

export async function startS3rver(t: Test): Promise<S3rverServer> {
  const base = mkdtempSync(join(tmpdir(), 'fg-s3rver-'))
  t.teardown(() => rmSync(base, { recursive: true, force: true }))
  const dir = join(base, 'data')
  const preload = join(base, 'abort-multipart.cjs')
  writeFileSync(preload, PRELOAD)
  const port = await freePort()
  const endpoint = `http://127.0.0.1:${port}`
  const args = ['--require', preload, join(S3RVER_DIR, 'bin', 's3rver.js'), '-d', dir, '-a', '127.0.0.1', '-p', String(port), '--silent']
  let server: Started | null = null
  const start = async (): Promise<void> => {
    // s3rver is plain JavaScript: it gets none of the test runner's loaders, whose hooks
    // break its CommonJS requires on Node 22. tap puts them back into NODE_OPTIONS on
    // every spawn, so env(1) takes them out just before node starts.
    server = await startServer(t, '/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, ...args], { port })
  }
  await start()

  const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3')
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3RVER_KEY, secretAccessKey: S3RVER_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  t.teardown(() => client.destroy())

  const uploadsDir = (bucket: string): string => join(dir, bucket, '._S3rver_uploads')
  const pendingUploads = (bucket: string): string[] => (existsSync(uploadsDir(bucket)) ? readdirSync(uploadsDir(bucket)) : [])
  return {
    endpoint,
    port,
    accessKeyId: S3RVER_KEY,
    secretAccessKey: S3RVER_KEY,
    dir,
    async bucket() {
      const name = `t-${randomBytes(6).toString('hex')}`
      await client.send(new CreateBucketCommand({ Bucket: name }))
      return name
    },
    pendingUploads,
    storedParts(bucket) {
      const uploads = uploadsDir(bucket)
      // Next to its parts (named by number), an upload folder holds "key" and "metadata".
      const parts = (id: string): number => {
        try {
          return readdirSync(join(uploads, id)).filter((f) => /^\d+$/.test(f)).length
        } catch {
          return 0 // completed or aborted meanwhile
        }
      }
      return pendingUploads(bucket).reduce((n, id) => n + parts(id), 0)
    },
    stop: async () => {
      await server?.stop()
    },
    start,
  }
}
