/**
 * @module gateways/s3/list
 * ListObjects (v1) and ListObjectsV2 over a bucket's folder tree (walk.ts). A
 * continuation token is the last key (or common prefix) returned, base64url-encoded
 * behind a version tag: it only says where to resume, so a forged one lists nothing the
 * caller could not list with `start-after`, and one that does not decode is refused.
 */
import type { HttpReply } from '../../core/http.js'
import { S3Error } from './errors.js'
import { MAX_KEY_BYTES, bucketPath } from './keys.js'
import { EMPTY_MD5 } from './meta/index.js'
import { type S3Request, statBucket } from './request.js'
import { type Found, walkKeys } from './walk.js'
import { type XmlNode, isoTime, xmlReply } from './xml.js'

const MAX_KEYS = 1000
const TOKEN_TAG = 'k1:'

export function encodeToken(key: string): string {
  return Buffer.from(TOKEN_TAG + key, 'utf8').toString('base64url')
}

export function decodeToken(token: string): string {
  const bad = () => new S3Error('InvalidArgument', 'The continuation token provided is incorrect', 400, { ArgumentName: 'continuation-token' })
  if (!/^[A-Za-z0-9_-]+$/.test(token)) throw bad()
  const bytes = Buffer.from(token, 'base64url')
  const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  let s: string
  try {
    s = text.decode(bytes)
  } catch {
    throw bad()
  }
  if (!s.startsWith(TOKEN_TAG) || Buffer.byteLength(s) - TOKEN_TAG.length > MAX_KEY_BYTES || s.length === TOKEN_TAG.length) throw bad()
  return s.slice(TOKEN_TAG.length)
}

function maxKeys(r: S3Request): number {
  const v = r.req.query.get('max-keys')
  if (v === null) return MAX_KEYS
  if (!/^\d{1,10}$/.test(v)) throw new S3Error('InvalidArgument', 'Provided max-keys not an integer or within integer range', 400, { ArgumentName: 'max-keys', ArgumentValue: v })
  return Math.min(Number(v), MAX_KEYS)
}

function encodingType(r: S3Request): ((s: string) => string) {
  const v = r.req.query.get('encoding-type')
  if (v === null) return (s) => s
  if (v !== 'url') throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', 400, { ArgumentName: 'encoding-type', ArgumentValue: v })
  // As S3 encodes: every byte that is not unreserved, except `/` (boto3 decodes what
  // comes back; a `%2F` would reach the user as a different prefix than the one asked).
  return urlEncodeKey
}

/** A key or prefix as `encoding-type=url` answers it: percent-encoded UTF-8, `/` left as it is. */
export const urlEncodeKey = (s: string): string => encodeURIComponent(s).replace(/%2F/g, '/')

/** One page: up to `max` keys and common prefixes after `after`, and whether more follow. */
async function page(r: S3Request, prefix: string, delimiter: string | null, after: string, max: number): Promise<{ found: Found[]; truncated: boolean }> {
  await statBucket(r)
  const found: Found[] = []
  if (max === 0) return { found, truncated: false }
  // A common prefix already returned: resuming at it skips every key under it.
  const afterIsPrefix = delimiter !== null && delimiter !== '' && after.length > prefix.length && after.startsWith(prefix) && after.endsWith(delimiter) && after.indexOf(delimiter, prefix.length) === after.length - delimiter.length
  for await (const f of walkKeys(r.caller.fs, r.ctx, bucketPath(r.bucket), { prefix, delimiter, after, afterIsPrefix })) {
    if (found.length === max) return { found, truncated: true }
    found.push(f)
  }
  return { found, truncated: false }
}

async function contents(r: S3Request, found: readonly Found[], enc: (s: string) => string, withOwner: boolean): Promise<XmlNode[]> {
  const objects = found.filter((f) => f.kind === 'object')
  // The ETags of the page's files: one state-store call (folder markers have theirs).
  const files = objects.filter((f) => !f.folder)
  const metas = await r.meta.getMany(r.caller.fs, files)
  const etags = new Map(files.map((f, i) => [f, metas[i]!.etag]))
  return objects.map((f) => ({
    Key: enc(f.key),
    LastModified: isoTime(f.entry.mtimeMs),
    ETag: `"${etags.get(f) ?? EMPTY_MD5}"`,
    Size: f.folder ? 0 : f.entry.size,
    ...(withOwner ? { Owner: { ID: r.caller.user, DisplayName: r.caller.user } } : {}),
    StorageClass: 'STANDARD',
  }))
}

const prefixes = (found: readonly Found[], enc: (s: string) => string): XmlNode[] =>
  found.filter((f) => f.kind === 'prefix').map((f) => ({ Prefix: enc(f.key) }))

export async function listObjectsV2(r: S3Request): Promise<HttpReply> {
  const q = r.req.query
  const prefix = q.get('prefix') ?? ''
  const delimiter = q.get('delimiter') || null
  const enc = encodingType(r)
  const max = maxKeys(r)
  // An empty `continuation-token=` is no token (SDKs send it on a first page).
  const token = q.get('continuation-token') || null
  const startAfter = q.get('start-after')
  const after = token !== null ? decodeToken(token) : (startAfter ?? '')
  const { found, truncated } = await page(r, prefix, delimiter, after, max)
  return xmlReply('ListBucketResult', {
    Name: r.bucket,
    Prefix: enc(prefix),
    ...(delimiter === null ? {} : { Delimiter: enc(delimiter) }),
    MaxKeys: max,
    ...(q.get('encoding-type') === null ? {} : { EncodingType: 'url' }),
    KeyCount: found.length,
    IsTruncated: truncated,
    ...(token === null ? {} : { ContinuationToken: token }),
    ...(truncated ? { NextContinuationToken: encodeToken(found.at(-1)!.key) } : {}),
    ...(startAfter === null ? {} : { StartAfter: enc(startAfter) }),
    Contents: await contents(r, found, enc, q.get('fetch-owner') === 'true'),
    CommonPrefixes: prefixes(found, enc),
  })
}

export async function listObjectsV1(r: S3Request): Promise<HttpReply> {
  const q = r.req.query
  const prefix = q.get('prefix') ?? ''
  const delimiter = q.get('delimiter') || null
  const enc = encodingType(r)
  const max = maxKeys(r)
  const marker = q.get('marker') ?? ''
  const { found, truncated } = await page(r, prefix, delimiter, marker, max)
  return xmlReply('ListBucketResult', {
    Name: r.bucket,
    Prefix: enc(prefix),
    Marker: enc(marker),
    ...(truncated ? { NextMarker: enc(found.at(-1)!.key) } : {}),
    MaxKeys: max,
    ...(delimiter === null ? {} : { Delimiter: enc(delimiter) }),
    ...(q.get('encoding-type') === null ? {} : { EncodingType: 'url' }),
    IsTruncated: truncated,
    Contents: await contents(r, found, enc, true),
    CommonPrefixes: prefixes(found, enc),
  })
}
