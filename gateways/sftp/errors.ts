/**
 * @module gateways/sftp/errors
 * The one table from the storage error vocabulary (core/errors.ts) to SFTP v3 status
 * codes (core/sftp-status.ts). SFTP v3 has few codes: everything that is neither "no
 * such file", "permission denied" nor "unsupported" is FAILURE, with the error's
 * message telling which.
 */
import { type FsErrorCode, isFsError } from '../../core/errors.js'
import type { SftpStatusCode } from '../../core/sftp-status.js'
import { STATUS } from './wire/codec.js'

const TABLE: Readonly<Record<FsErrorCode, SftpStatusCode>> = {
  ENOENT: STATUS.NO_SUCH_FILE,
  EACCES: STATUS.PERMISSION_DENIED,
  ENOTSUP: STATUS.OP_UNSUPPORTED,
  EEXIST: STATUS.FAILURE,
  ENOTDIR: STATUS.FAILURE,
  EISDIR: STATUS.FAILURE,
  ENOTEMPTY: STATUS.FAILURE,
  EINVAL: STATUS.FAILURE,
  ECANCELED: STATUS.FAILURE,
  ETIMEDOUT: STATUS.FAILURE,
  EUNAVAILABLE: STATUS.FAILURE,
  EBUSY: STATUS.FAILURE, // the message says which limit, and to retry
  EOVERLOAD: STATUS.FAILURE, // the message says to retry
  EAUTH: STATUS.FAILURE,
  EFBIG: STATUS.FAILURE,
  ENOSPC: STATUS.FAILURE, // v3 has no code for it (SSH_FX_NO_SPACE_ON_FILESYSTEM is v5): the message says it
  EMEDIA: STATUS.FAILURE,
  EINTEGRITY: STATUS.FAILURE,
  EIO: STATUS.FAILURE,
}

export interface SftpStatus {
  readonly code: number
  readonly message: string
}

/** An error → the status to answer. Anything not an `FsError` is a bug: `internal error`, logged by the caller. */
export function toStatus(err: unknown): SftpStatus & { readonly bug: boolean } {
  if (isFsError(err)) return { code: TABLE[err.code], message: err.message, bug: false }
  return { code: STATUS.FAILURE, message: 'internal error', bug: true }
}
