/**
 * @module gateways/s3/keys
 * Bucket names and object keys → paths of the caller's `View`. A bucket is a
 * top-level directory of the caller's root; a key is a path below it, split at `/`.
 * The rule is the S3 door's in core/paths.ts (`DOOR_PATH_RULES.s3`, and `s3BucketPath` for the bucket's folder); here its
 * refusals get S3's error shape.
 */
import { DOOR_PATH_RULES, KeyRefusal, MAX_S3_KEY_BYTES, s3BucketPath } from '../../core/paths.js'
import { S3Error } from './errors.js'

/** S3's limit on a key's length (UTF-8 bytes). */
export const MAX_KEY_BYTES = MAX_S3_KEY_BYTES

/** Percent-decodes a part of a request's raw path; invalid escapes or UTF-8 are S3's InvalidURI. */
export function decodePathPart(raw: string): string {
  let s: string
  try {
    s = decodeURIComponent(raw)
  } catch {
    throw new S3Error('InvalidURI', `Couldn't parse the specified URI: ${raw.slice(0, 200)}`, 400)
  }
  if (!s.isWellFormed()) throw new S3Error('InvalidURI', 'The specified URI is not valid UTF-8', 400)
  return s
}

/**
 * The rules of S3 for a new bucket (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html):
 * 3 to 63 characters of `a-z 0-9 . -`, starting and ending with a letter or digit, no `..`,
 * not an IP address, none of the reserved prefixes and suffixes.
 */
export function checkNewBucketName(name: string): void {
  const bad =
    !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) ||
    name.includes('..') ||
    /^\d+\.\d+\.\d+\.\d+$/.test(name) ||
    /^(xn--|sthree-|amzn-s3-demo-)/.test(name) ||
    /(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/.test(name)
  if (bad) throw new S3Error('InvalidBucketName', 'The specified bucket is not valid.', 400, { BucketName: name })
}

/**
 * A bucket named in a request: any directory name at the top of the root may be one
 * (folders made through other doors keep their names), so only what cannot be a single
 * directory name is refused.
 */
export function bucketPath(name: string): string {
  const path = s3BucketPath(name)
  if (path === null) throw new S3Error('InvalidBucketName', 'The specified bucket is not valid.', 400, { BucketName: name })
  return path
}

export interface KeyPath {
  /** The canonical path of the object (for a key ending in `/`: of its folder). */
  readonly path: string
  /** The key ends with `/`: a folder marker. */
  readonly folder: boolean
}

/**
 * A key → its path inside the bucket's directory, or S3's error: an empty key
 * (InvalidArgument), over 1024 bytes (KeyTooLongError), and what the door's rule
 * refuses (InvalidArgument, with the rule's reason).
 */
export function keyPath(bucket: string, key: string): KeyPath {
  const dir = bucketPath(bucket)
  try {
    return DOOR_PATH_RULES.s3(dir, key)
  } catch (err) {
    if (!(err instanceof KeyRefusal)) throw err
    if (err.reason === 'too-long') {
      throw new S3Error('KeyTooLongError', err.message, 400, err.bytes > MAX_KEY_BYTES ? { Size: String(err.bytes), MaxSizeAllowed: String(MAX_KEY_BYTES) } : {})
    }
    throw new S3Error('InvalidArgument', err.message, 400, err.reason === 'empty' ? {} : { ArgumentName: 'key' })
  }
}

/** Orders strings as S3 orders keys: by their UTF-8 bytes (= by code points, not UTF-16 units). */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    // Surrogates (pairs: code points over U+FFFF) sort after every other UTF-16 unit.
    const sx = x >= 0xd800 && x <= 0xdfff
    const sy = y >= 0xd800 && y <= 0xdfff
    if (sx !== sy) return sx ? 1 : -1
    return x - y
  }
  return a.length - b.length
}
