/**
 * @module workers/drivers/smb/errors
 * Section 2 of the smb driver: classify. NT status codes (MS-ERREF 2.3) and
 * transport failures → FsError. The only place that knows what SMB errors look like.
 */
import { FsError, type FsErrorCode, isFsError } from '../../../core/errors.js'

/** A reply whose status is an error, as data (the session throws these). */
export class NtStatusError extends Error {
  readonly status: number

  constructor(status: number, command: string) {
    super(`${command}: ${statusName(status)}`)
    this.name = 'NtStatusError'
    this.status = status
  }
}

/** Transport failures: the connection is gone or never came. */
export class SmbTransportError extends Error {
  readonly code: 'EUNAVAILABLE' | 'ETIMEDOUT' | 'EAUTH' | 'ENOTSUP' | 'EIO'

  constructor(code: SmbTransportError['code'], message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'SmbTransportError'
    this.code = code
  }
}

export const STATUS = {
  SUCCESS: 0x00000000,
  PENDING: 0x00000103,
  MORE_PROCESSING_REQUIRED: 0xc0000016,
  NO_MEMORY: 0xc0000017,
  INSUFFICIENT_RESOURCES: 0xc000009a,
  REQUEST_NOT_ACCEPTED: 0xc00000d0,
  NO_MORE_FILES: 0x80000006,
  END_OF_FILE: 0xc0000011,
  INVALID_PARAMETER: 0xc000000d,
  ACCESS_DENIED: 0xc0000022,
  OBJECT_NAME_INVALID: 0xc0000033,
  OBJECT_NAME_NOT_FOUND: 0xc0000034,
  OBJECT_NAME_COLLISION: 0xc0000035,
  OBJECT_PATH_INVALID: 0xc0000039,
  OBJECT_PATH_NOT_FOUND: 0xc000003a,
  OBJECT_PATH_SYNTAX_BAD: 0xc000003b,
  SHARING_VIOLATION: 0xc0000043,
  QUOTA_EXCEEDED: 0xc0000044,
  DELETE_PENDING: 0xc0000056,
  PRIVILEGE_NOT_HELD: 0xc0000061,
  NO_SUCH_USER: 0xc0000064,
  WRONG_PASSWORD: 0xc000006a,
  LOGON_FAILURE: 0xc000006d,
  ACCOUNT_RESTRICTION: 0xc000006e,
  INVALID_LOGON_HOURS: 0xc000006f,
  INVALID_WORKSTATION: 0xc0000070,
  PASSWORD_EXPIRED: 0xc0000071,
  ACCOUNT_DISABLED: 0xc0000072,
  DISK_FULL: 0xc000007f,
  IO_TIMEOUT: 0xc00000b5,
  FILE_IS_A_DIRECTORY: 0xc00000ba,
  NOT_SUPPORTED: 0xc00000bb,
  NETWORK_NAME_DELETED: 0xc00000c9,
  BAD_NETWORK_NAME: 0xc00000cc,
  DIRECTORY_NOT_EMPTY: 0xc0000101,
  NOT_A_DIRECTORY: 0xc0000103,
  CANNOT_DELETE: 0xc0000121,
  FILE_CLOSED: 0xc0000128,
  INVALID_DEVICE_STATE: 0xc0000184,
  USER_SESSION_DELETED: 0xc0000203,
  CONNECTION_DISCONNECTED: 0xc000020c,
  ACCOUNT_LOCKED_OUT: 0xc0000234,
  NETWORK_SESSION_EXPIRED: 0xc000035c,
  PASSWORD_MUST_CHANGE: 0xc0000224,
} as const

const NAMES = new Map<number, string>(Object.entries(STATUS).map(([k, v]) => [v, `STATUS_${k}`]))

export function statusName(status: number): string {
  return NAMES.get(status) ?? `NT status 0x${status.toString(16).padStart(8, '0')}`
}

const AUTH = new Set<number>([
  STATUS.NO_SUCH_USER,
  STATUS.WRONG_PASSWORD,
  STATUS.LOGON_FAILURE,
  STATUS.ACCOUNT_RESTRICTION,
  STATUS.INVALID_LOGON_HOURS,
  STATUS.INVALID_WORKSTATION,
  STATUS.PASSWORD_EXPIRED,
  STATUS.ACCOUNT_DISABLED,
  STATUS.ACCOUNT_LOCKED_OUT,
  STATUS.PASSWORD_MUST_CHANGE,
])

const CODES = new Map<number, [FsErrorCode, string]>([
  [STATUS.OBJECT_NAME_NOT_FOUND, ['ENOENT', 'no such file or directory']],
  [STATUS.OBJECT_PATH_NOT_FOUND, ['ENOENT', 'no such file or directory']],
  [STATUS.DELETE_PENDING, ['ENOENT', 'no such file or directory (being deleted)']],
  [STATUS.BAD_NETWORK_NAME, ['ENOENT', 'no such share on the SMB server']],
  [STATUS.OBJECT_NAME_COLLISION, ['EEXIST', 'already exists']],
  [STATUS.NOT_A_DIRECTORY, ['ENOTDIR', 'not a directory']],
  [STATUS.FILE_IS_A_DIRECTORY, ['EISDIR', 'is a directory']],
  [STATUS.DIRECTORY_NOT_EMPTY, ['ENOTEMPTY', 'directory not empty']],
  [STATUS.ACCESS_DENIED, ['EACCES', 'permission denied by the SMB server']],
  [STATUS.PRIVILEGE_NOT_HELD, ['EACCES', 'permission denied by the SMB server']],
  [STATUS.CANNOT_DELETE, ['EACCES', 'the SMB server refuses to delete it']],
  [STATUS.SHARING_VIOLATION, ['EACCES', 'in use by another client of the SMB server']],
  [STATUS.OBJECT_NAME_INVALID, ['EINVAL', 'a name the SMB server does not accept (SMB forbids \\ / : * ? " < > |)']],
  [STATUS.OBJECT_PATH_INVALID, ['EINVAL', 'a path the SMB server does not accept']],
  [STATUS.OBJECT_PATH_SYNTAX_BAD, ['EINVAL', 'a path the SMB server does not accept']],
  [STATUS.INVALID_PARAMETER, ['EINVAL', 'the SMB server refused a parameter']],
  [STATUS.NOT_SUPPORTED, ['ENOTSUP', 'the SMB server does not support this']],
  [STATUS.QUOTA_EXCEEDED, ['EFBIG', 'over the quota of the SMB share']],
  [STATUS.DISK_FULL, ['ENOSPC', 'no space left on the SMB share']],
  [STATUS.IO_TIMEOUT, ['ETIMEDOUT', 'the SMB server timed out']],
  [STATUS.NETWORK_NAME_DELETED, ['EUNAVAILABLE', 'the SMB connection was lost']],
  [STATUS.FILE_CLOSED, ['EUNAVAILABLE', 'the SMB connection was lost']],
  [STATUS.INVALID_DEVICE_STATE, ['EUNAVAILABLE', 'the SMB connection was lost']],
  [STATUS.USER_SESSION_DELETED, ['EUNAVAILABLE', 'the SMB session was closed by the server']],
  [STATUS.NETWORK_SESSION_EXPIRED, ['EUNAVAILABLE', 'the SMB session expired']],
  [STATUS.CONNECTION_DISCONNECTED, ['EUNAVAILABLE', 'the SMB connection was lost']],
  // The server is short of something (seen from Samba right after a restart under load): try later.
  [STATUS.NO_MEMORY, ['EUNAVAILABLE', 'the SMB server is out of resources']],
  [STATUS.INSUFFICIENT_RESOURCES, ['EUNAVAILABLE', 'the SMB server is out of resources']],
  [STATUS.REQUEST_NOT_ACCEPTED, ['EUNAVAILABLE', 'the SMB server accepts no more connections']],
])

/** Anything an SMB operation threw → FsError. The message names the storage path, never the server's. */
export function classify(err: unknown, path: string): FsError {
  if (isFsError(err)) return err
  if (err instanceof SmbTransportError) {
    return err.code === 'EAUTH' ? new FsError('EAUTH', err.message, { cause: err }) : new FsError(err.code, err.message, { path, cause: err })
  }
  if (err instanceof NtStatusError) {
    if (AUTH.has(err.status)) return new FsError('EAUTH', 'the SMB server refused the user name or password', { cause: err })
    const known = CODES.get(err.status)
    if (known) return new FsError(known[0], `${path}: ${known[1]}`, { path, cause: err })
    return new FsError('EIO', `${path}: SMB error ${statusName(err.status)}`, { path, cause: err })
  }
  const sys = (err as { code?: unknown } | null)?.code
  if (sys === 'ABORT_ERR') return new FsError('ECANCELED', 'cancelled', { path, cause: err })
  return new FsError('EIO', `${path}: storage error`, { path, cause: err })
}
