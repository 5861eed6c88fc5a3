/**
 * @module core/errors
 * The storage error vocabulary. Drivers classify their native errors into an
 * `FsError` once (their `classify` function); every protocol edge maps the code
 * to its own status in its own table. Errors cross thread boundaries as plain
 * data (`WireError`): class identity and custom fields do not survive
 * `postMessage`, so nothing may rely on `instanceof` across a thread.
 */

export const FS_ERROR_CODES = [
  'ENOENT', // no such file or directory
  'EEXIST', // target already exists
  'ENOTDIR', // a directory was needed, a file was found
  'EISDIR', // a file was needed, a directory was found
  'ENOTEMPTY', // directory not empty
  'EACCES', // not allowed (also: a symlink leading outside the root)
  'EINVAL', // bad argument (e.g. moving a directory into itself)
  'ENOTSUP', // the backend cannot do this
  'ECANCELED', // the caller went away
  'ETIMEDOUT', // the backend did not answer in time
  'EUNAVAILABLE', // the backend refused or dropped the connection
  'EBUSY', // a fairness limit of this server (too many transfers at once for this client): retry later
  'EOVERLOAD', // this server refused the task (its worker pool is full, or it is shutting down): retry shortly
  'EAUTH', // the backend refused the credentials
  'EFBIG', // over a size limit (the configured upload limit, a backend quota, a plugin's input cap)
  'ENOSPC', // the storage (or the server's data folder) has no room left
  'EMEDIA', // a plugin cannot transform this file (e.g. ASCII art of a file that is not an image)
  'EINTEGRITY', // the bytes received do not match the digest they were sent with: nothing was written
  'EIO', // anything else: a bug or an unexpected backend failure
] as const

export type FsErrorCode = (typeof FS_ERROR_CODES)[number]

/** The plain-data form of an error; what crosses threads. */
export interface WireError {
  readonly code: FsErrorCode
  readonly message: string
  readonly retryable: boolean
  readonly path?: string
}

const CODE_SET: ReadonlySet<string> = new Set(FS_ERROR_CODES)

/** Codes after which retrying the same request may succeed. */
const RETRYABLE: ReadonlySet<FsErrorCode> = new Set(['ETIMEDOUT', 'EUNAVAILABLE', 'EBUSY', 'EOVERLOAD'])

export class FsError extends Error {
  readonly code: FsErrorCode
  readonly retryable: boolean
  readonly path: string | undefined

  constructor(code: FsErrorCode, message: string, opts: { path?: string; cause?: unknown; retryable?: boolean } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'FsError'
    this.code = code
    this.path = opts.path
    this.retryable = opts.retryable ?? RETRYABLE.has(code)
  }
}

export const isFsErrorCode = (x: unknown): x is FsErrorCode => typeof x === 'string' && CODE_SET.has(x)

/** Duck-typed check: works on errors from any realm or thread. */
export const isFsError = (x: unknown): x is FsError =>
  x instanceof Error && isFsErrorCode((x as { code?: unknown }).code) && x.name === 'FsError'

export function toWire(err: unknown): WireError {
  if (isFsError(err)) {
    return err.path === undefined
      ? { code: err.code, message: err.message, retryable: err.retryable }
      : { code: err.code, message: err.message, retryable: err.retryable, path: err.path }
  }
  // Not classified: a bug. The detail stays in this thread's logs, not on the wire.
  return { code: 'EIO', message: 'internal error', retryable: false }
}

export function fromWire(w: WireError): FsError {
  const code = isFsErrorCode(w.code) ? w.code : 'EIO'
  return new FsError(code, String(w.message), {
    retryable: Boolean(w.retryable),
    ...(typeof w.path === 'string' ? { path: w.path } : {}),
  })
}

/**
 * A Node error of the server's own disk where filegate stages uploads in its data folder
 * (tus uploads, S3 multipart parts, the gateways' staging copies): no space left (or over
 * a disk quota) becomes ENOSPC, so every door answers it in its own shape; anything else
 * is returned as it was.
 */
export function stagingError(err: unknown): unknown {
  const sys = (err as { code?: unknown } | null)?.code
  return sys === 'ENOSPC' || sys === 'EDQUOT' ? new FsError('ENOSPC', "no space left on the server's disk for staged uploads", { cause: err }) : err
}
