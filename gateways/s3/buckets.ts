/**
 * @module gateways/s3/buckets
 * Buckets are the folders at the top of the caller's root: ListBuckets, CreateBucket,
 * DeleteBucket (empty only), HeadBucket, GetBucketLocation, GetBucketVersioning.
 */
import type { HttpReply } from '../../core/http.js'
import { S3Error, noSuchBucket } from './errors.js'
import { bucketPath, checkNewBucketName } from './keys.js'
import { decodeToken, encodeToken } from './list.js'
import { type S3Request, codeOf, statBucket } from './request.js'
import { type XmlNode, isoTime, parseXml, xmlReply } from './xml.js'

const owner = (r: S3Request): XmlNode => ({ ID: r.caller.user, DisplayName: r.caller.user })

/** ListBuckets' largest page (S3's too). */
const MAX_BUCKETS = 10_000

function maxBuckets(r: S3Request): number | null {
  const v = r.req.query.get('max-buckets')
  if (v === null) return null
  if (!/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > MAX_BUCKETS) {
    throw new S3Error('InvalidArgument', `Argument max-buckets must be an integer between 1 and ${MAX_BUCKETS}`, 400, { ArgumentName: 'max-buckets', ArgumentValue: v })
  }
  return Number(v)
}

/**
 * ListBuckets: every bucket, or with `max-buckets` a page of them by name, and a
 * `ContinuationToken` (the list's token: the last name, encoded) while more follow.
 */
export async function listBuckets(r: S3Request): Promise<HttpReply> {
  const q = r.req.query
  const max = maxBuckets(r)
  // An empty `continuation-token=` is no token.
  const token = q.get('continuation-token') || null
  const after = token === null ? null : decodeToken(token)
  const prefix = q.get('prefix') ?? ''
  const names: { name: string; mtimeMs: number | null }[] = []
  let cursor: string | null = null
  do {
    const page = await r.caller.fs.list(r.ctx, '/', { cursor, limit: 1000 })
    for (const e of page.entries) {
      if (e.kind === 'dir' && e.name.startsWith(prefix) && (after === null || e.name > after)) names.push({ name: e.name, mtimeMs: e.mtimeMs })
    }
    cursor = page.cursor
  } while (cursor !== null)
  names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const shown = max === null ? names : names.slice(0, max)
  const more = shown.length < names.length
  return xmlReply('ListAllMyBucketsResult', {
    Owner: owner(r),
    Buckets: { Bucket: shown.map((b) => ({ Name: b.name, CreationDate: isoTime(b.mtimeMs) })) },
    ...(more ? { ContinuationToken: encodeToken(shown.at(-1)!.name) } : {}),
    ...(q.has('prefix') ? { Prefix: prefix } : {}),
  })
}

/** Reads a CreateBucketConfiguration (optional) and checks its LocationConstraint. */
async function readConfiguration(r: S3Request): Promise<void> {
  const chunks: Uint8Array[] = []
  let n = 0
  for await (const c of r.caller.body) {
    n += c.length
    if (n > 64 * 1024) throw new S3Error('MalformedXML', 'The CreateBucketConfiguration is too large.', 400)
    chunks.push(c)
  }
  if (n === 0) return
  const doc = parseXml(Buffer.concat(chunks).toString('utf8'))
  const conf = doc.CreateBucketConfiguration as Record<string, unknown> | undefined
  const loc = conf && typeof conf === 'object' ? conf.LocationConstraint : undefined
  // `aws-global` is what SDKs send for the global endpoint (us-east-1's alias): here, the configured region.
  if (typeof loc === 'string' && loc !== '' && loc !== r.region && loc !== 'aws-global') {
    throw new S3Error('IllegalLocationConstraintException', `The ${loc} location constraint is incompatible for the region specific endpoint this request was sent to.`, 400)
  }
}

export async function createBucket(r: S3Request): Promise<HttpReply> {
  checkNewBucketName(r.bucket)
  await readConfiguration(r)
  try {
    await r.caller.fs.mkdir(r.ctx, bucketPath(r.bucket))
  } catch (err) {
    if (codeOf(err) === 'EEXIST') {
      throw new S3Error('BucketAlreadyOwnedByYou', 'Your previous request to create the named bucket succeeded and you already own it.', 409, { BucketName: r.bucket })
    }
    throw err
  }
  return { status: 200, headers: { location: `/${r.bucket}` } }
}

export async function deleteBucket(r: S3Request): Promise<HttpReply> {
  try {
    await r.caller.fs.rmdir(r.ctx, bucketPath(r.bucket))
  } catch (err) {
    const code = codeOf(err)
    if (code === 'ENOENT' || code === 'ENOTDIR') throw noSuchBucket(r.bucket)
    if (code === 'ENOTEMPTY') throw new S3Error('BucketNotEmpty', 'The bucket you tried to delete is not empty', 409, { BucketName: r.bucket })
    throw err
  }
  return { status: 204 }
}

export async function headBucket(r: S3Request): Promise<HttpReply> {
  await statBucket(r)
  return { status: 200, headers: { 'x-amz-bucket-region': r.region } }
}

export async function bucketLocation(r: S3Request): Promise<HttpReply> {
  await statBucket(r)
  // S3 answers an empty constraint for us-east-1.
  return xmlReply('LocationConstraint', r.region === 'us-east-1' ? {} : { '#text': r.region })
}

export async function bucketVersioning(r: S3Request): Promise<HttpReply> {
  await statBucket(r)
  return xmlReply('VersioningConfiguration', {}) // never enabled: no Status
}
