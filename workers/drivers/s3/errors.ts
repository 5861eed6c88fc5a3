/**
 * @module workers/drivers/s3/errors
 * Section 2 of the s3 driver: classify. AWS SDK and network errors → FsError; the only
 * place that knows what S3 errors look like.
 */
import { FsError, isFsError } from '../../../core/errors.js'
import { socketErrorCode } from '../socket-errors.js'

export interface SdkError {
  name?: string
  code?: string
  Code?: string
  message?: string
  $metadata?: { httpStatusCode?: number }
}

/** SDK or network error → FsError. The message names the storage path, never a key or URL. */
export function classify(err: unknown, path: string): FsError {
  if (isFsError(err)) return err
  const e = (err ?? {}) as SdkError
  const name = e.name ?? e.Code ?? ''
  const status = e.$metadata?.httpStatusCode
  const mk = (code: ConstructorParameters<typeof FsError>[0], msg: string) => new FsError(code, `${path}: ${msg}`, { path, cause: err })
  if (name === 'AbortError') return new FsError('ECANCELED', 'cancelled', { path, cause: err })
  switch (name) {
    case 'NoSuchKey':
    case 'NotFound':
    case 'NoSuchUpload':
      return mk('ENOENT', 'no such file or directory')
    case 'NoSuchBucket':
      return mk('ENOENT', 'no such bucket')
    case 'InvalidAccessKeyId':
    case 'SignatureDoesNotMatch':
    case 'InvalidToken':
    case 'ExpiredToken':
    case 'TokenRefreshRequired':
      return new FsError('EAUTH', 'the S3 server refused the credentials', { path, cause: err })
    case 'AccessDenied':
    case 'AllAccessDisabled':
      return mk('EACCES', 'access denied by the S3 server')
    case 'BucketNotEmpty':
      return mk('ENOTEMPTY', 'bucket not empty')
    case 'BucketAlreadyExists':
    case 'PreconditionFailed':
      return mk('EEXIST', 'already exists')
    case 'InvalidBucketName':
    case 'KeyTooLongError':
    case 'InvalidArgument':
      return mk('EINVAL', `the S3 server refused the name (${name})`)
    case 'EntityTooLarge':
      return mk('EFBIG', 'too large for the S3 server')
    case 'NotImplemented':
      return mk('ENOTSUP', 'the S3 server does not support this operation')
    case 'TimeoutError':
    case 'RequestTimeout':
      return mk('ETIMEDOUT', 'the S3 server did not answer in time')
    case 'SlowDown':
    case 'ServiceUnavailable':
    case 'InternalError':
      return mk('EUNAVAILABLE', `the S3 server is unavailable (${name})`)
  }
  if (socketErrorCode(err) !== null) return mk('EUNAVAILABLE', 'the S3 server cannot be reached')
  if (e.code === 'ETIMEDOUT') return mk('ETIMEDOUT', 'the S3 server did not answer in time')
  if (status === 404) return mk('ENOENT', 'no such file or directory')
  if (status === 403) return mk('EACCES', 'access denied by the S3 server')
  if (status === 412) return mk('EEXIST', 'already exists')
  if (status !== undefined && status >= 500) return mk('EUNAVAILABLE', `the S3 server failed (HTTP ${status})`)
  if (status === undefined && /socket|network|aborted|connect/i.test(e.message ?? '')) return mk('EUNAVAILABLE', 'the S3 server cannot be reached')
  return mk('EIO', 'storage error')
}
