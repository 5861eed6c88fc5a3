/**
 * @module core/api-error
 * The contract's error codes (docs/api.md, "Conventions and errors"): what clients of every
 * protocol see. `ApiError` is thrown by request handling on the main thread;
 * storage errors (`FsError`) become one through `toApiError` (`API_CODE_OF_FS`).
 */
import { type FsErrorCode, isFsError } from './errors.js'

export const API_CODES = [
  'INVALID_INPUT',
  'NOT_AUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'GONE',
  'TOO_LARGE',
  'UNSUPPORTED_MEDIA',
  'RANGE_NOT_SATISFIABLE',
  'RATE_LIMITED',
  'INTERNAL',
  'NOT_SUPPORTED',
  'BACKEND_UNREACHABLE',
  'UNAVAILABLE',
  'BACKEND_TIMEOUT',
  'INSUFFICIENT_STORAGE',
] as const

export type ApiCode = (typeof API_CODES)[number]

export class ApiError extends Error {
  readonly code: ApiCode
  constructor(code: ApiCode, message: string, opts: { cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'ApiError'
    this.code = code
  }
}

export const isApiError = (x: unknown): x is ApiError =>
  x instanceof Error && x.name === 'ApiError' && (API_CODES as readonly string[]).includes((x as { code?: unknown }).code as string)

/** Storage code → contract code. Typed as a full record so a new FsErrorCode cannot be forgotten. */
export const API_CODE_OF_FS: Readonly<Record<FsErrorCode, ApiCode>> = {
  ENOENT: 'NOT_FOUND',
  EEXIST: 'CONFLICT',
  ENOTDIR: 'INVALID_INPUT',
  EISDIR: 'INVALID_INPUT',
  ENOTEMPTY: 'CONFLICT',
  EACCES: 'FORBIDDEN',
  EINVAL: 'INVALID_INPUT',
  ENOTSUP: 'NOT_SUPPORTED',
  ECANCELED: 'INTERNAL', // never sent: the client is gone
  ETIMEDOUT: 'BACKEND_TIMEOUT',
  EUNAVAILABLE: 'BACKEND_UNREACHABLE',
  EBUSY: 'RATE_LIMITED',
  EOVERLOAD: 'UNAVAILABLE',
  EAUTH: 'NOT_AUTHENTICATED',
  EFBIG: 'TOO_LARGE',
  ENOSPC: 'INSUFFICIENT_STORAGE',
  EMEDIA: 'UNSUPPORTED_MEDIA',
  EINTEGRITY: 'INVALID_INPUT',
  EIO: 'INTERNAL',
}

/** Any thrown value → an ApiError with a message safe to show a client. */
export function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err
  if (isFsError(err)) {
    const code = API_CODE_OF_FS[err.code]
    return new ApiError(code, code === 'INTERNAL' ? 'internal error' : err.message, { cause: err })
  }
  return new ApiError('INTERNAL', 'internal error', { cause: err })
}
