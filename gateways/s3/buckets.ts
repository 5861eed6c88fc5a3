/**
 * @module gateways/s3/buckets
 * Buckets are the folders at the top of the caller's root: ListBuckets, CreateBucket,
 * DeleteBucket (empty only), HeadBucket, GetBucketLocation, GetBucketVersioning.
 */
import type { HttpReply } from '../../core/http.js'
import { S3Error, noSuchBucket } from './errors.js'
import { bucketPath, checkNewBucketName } from './keys.js'
import { type S3Request, codeOf, statBucket } from './request.js'
import { type XmlNode, isoTime, parseXml, xmlReply } from './xml.js'

const owner = (r: S3Request): XmlNode => ({ ID: r.caller.user, DisplayName: r.caller.user })

export async function listBuckets(r: S3Request): Promise<HttpReply> {
  const buckets: XmlNode[] = []
  let cursor: string | null = null
  do {
    const page = await r.caller.fs.list(r.ctx, '/', { cursor, limit: 1000 })
    for (const e of page.entries) if (e.kind === 'dir') buckets.push({ Name: e.name, CreationDate: isoTime(e.mtimeMs) })
    cursor = page.cursor
  } while (cursor !== null)
  return xmlReply('ListAllMyBucketsResult', { Owner: owner(r), Buckets: { Bucket: buckets } })
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
  if (typeof loc === 'string' && loc !== '' && loc !== r.region) {
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
