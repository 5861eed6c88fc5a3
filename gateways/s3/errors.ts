/**
 * @module gateways/s3/errors
 * An S3 error: the code, message and HTTP status S3 itself answers with
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html). Everything
 * the S3 gateway refuses is thrown as one of these and rendered as S3's XML error
 * document in one place (gateways/s3/handler.ts). Storage errors (`FsError`) become
 * S3 errors through the one table below.
 */
import { type ApiCode, isApiError } from '../../core/api-error.js'
import { type FsErrorCode, isFsError } from '../../core/errors.js'

export class S3Error extends Error {
  constructor(
    /** e.g. `NoSuchKey`, `SignatureDoesNotMatch`. */
    readonly code: string,
    message: string,
    readonly status: number,
    /** Extra elements of the error document (e.g. `Key`, `BucketName`). */
    readonly extra: Readonly<Record<string, string>> = {},
  ) {
    super(message)
    this.name = 'S3Error'
  }
}

/**
 * The storage's error vocabulary (core/errors.ts) → S3's codes. Operations that know
 * better say so first (a missing bucket is NoSuchBucket, a folder that is not empty is
 * BucketNotEmpty...); this is what is left.
 */
const TABLE: Readonly<Record<FsErrorCode, readonly [code: string, status: number]>> = {
  ENOENT: ['NoSuchKey', 404],
  EEXIST: ['PreconditionFailed', 412],
  ENOTDIR: ['InvalidArgument', 400],
  EISDIR: ['InvalidArgument', 400],
  ENOTEMPTY: ['BucketNotEmpty', 409],
  EACCES: ['AccessDenied', 403],
  EINVAL: ['InvalidArgument', 400],
  ENOTSUP: ['NotImplemented', 501],
  ECANCELED: ['RequestTimeout', 400],
  ETIMEDOUT: ['ServiceUnavailable', 503],
  EUNAVAILABLE: ['ServiceUnavailable', 503],
  EBUSY: ['SlowDown', 503], // a fairness limit: SDKs back off and retry
  EOVERLOAD: ['ServiceUnavailable', 503],
  EAUTH: ['AccessDenied', 403],
  EFBIG: ['EntityTooLarge', 400],
  ENOSPC: ['InsufficientStorage', 507], // no AWS code for it: WebDAV's 507, not retried by SDKs as a 503 would be
  EMEDIA: ['InvalidRequest', 400],
  EINTEGRITY: ['BadDigest', 400],
  EIO: ['InternalError', 500],
}

/** Messages for the storage's errors, where S3's own wording is clearer than the storage's. */
const MESSAGES: Partial<Record<FsErrorCode, string>> = {
  ENOENT: 'The specified key does not exist.',
  EEXIST: 'At least one of the pre-conditions you specified did not hold',
  ENOTDIR: 'A folder on the way to this key is an object: it cannot hold keys under it on this storage.',
  EISDIR: 'This key names a folder on this storage (it holds other keys).',
  ETIMEDOUT: 'The storage behind this endpoint did not answer in time. Please retry.',
  EUNAVAILABLE: 'The storage behind this endpoint cannot be reached now. Please retry.',
  ENOSPC: 'The storage behind this endpoint has no space left for this object.',
  EIO: 'We encountered an internal error. Please try again.',
}

/** What the HTTP engine refuses itself, before the gateway sees the request (a malformed head, an unknown method, a shutdown). */
const ENGINE: Partial<Record<ApiCode, readonly [code: string, status: number]>> = {
  INVALID_INPUT: ['InvalidRequest', 400],
  NOT_SUPPORTED: ['NotImplemented', 501],
  UNAVAILABLE: ['ServiceUnavailable', 503],
  TOO_LARGE: ['EntityTooLarge', 400],
}

/**
 * Any error → the S3 error to answer. `bug` marks what is not an S3Error nor a
 * storage error (the caller logs it; the client only sees InternalError).
 */
export function toS3Error(err: unknown): { error: S3Error; bug: boolean } {
  if (err instanceof S3Error) return { error: err, bug: false }
  if (isFsError(err)) {
    const [code, status] = TABLE[err.code]
    return { error: new S3Error(code, MESSAGES[err.code] ?? err.message, status), bug: err.code === 'EIO' }
  }
  if (isApiError(err)) {
    const engine = ENGINE[err.code]
    if (engine) return { error: new S3Error(engine[0], err.message, engine[1]), bug: false }
  }
  return { error: new S3Error('InternalError', 'We encountered an internal error. Please try again.', 500), bug: true }
}

export const noSuchBucket = (bucket: string): S3Error => new S3Error('NoSuchBucket', 'The specified bucket does not exist', 404, { BucketName: bucket })
export const noSuchKey = (key: string): S3Error => new S3Error('NoSuchKey', 'The specified key does not exist.', 404, { Key: key })
export const notImplemented = (what: string): S3Error =>
  new S3Error('NotImplemented', `${what} is not implemented by this server.`, 501)
