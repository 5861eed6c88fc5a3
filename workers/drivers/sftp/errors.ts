/**
 * @module workers/drivers/sftp/errors
 * Section 2 of the sftp driver: ssh2 and SFTP status errors → FsError.
 */
import { FsError, isFsError } from '../../../core/errors.js'
import { SFTP_STATUS } from '../../../core/sftp-status.js'
import { socketErrorCode } from '../socket-errors.js'

// 2) classify ----------------------------------------------------------------

/** SFTP v3 status codes: the table the SFTP gateway answers with too (core/sftp-status.ts). */
export const Status = SFTP_STATUS

/**
 * ssh2 / SFTP error → FsError. SFTP v3 has one code for most failures (FAILURE):
 * operations that can tell EEXIST from ENOTEMPTY from other failures do so by
 * looking (a stat) before calling classify. Messages name the storage path only.
 */
export function classify(err: unknown, path?: string): FsError {
  if (isFsError(err)) return err
  const e = (err ?? {}) as { code?: unknown; level?: unknown; message?: unknown }
  const msg = typeof e.message === 'string' ? e.message : String(err)
  const at = path === undefined ? '' : `${path}: `
  const opts = { cause: err, ...(path === undefined ? {} : { path }) }
  if (e.level === 'client-authentication') return new FsError('EAUTH', 'the SFTP server refused the credentials', opts)
  if (e.level === 'client-timeout' || e.code === 'ETIMEDOUT') return new FsError('ETIMEDOUT', 'the SFTP server did not answer in time', opts)
  const sock = socketErrorCode(err)
  if (sock !== null) return new FsError('EUNAVAILABLE', `the SFTP server cannot be reached (${sock})`, opts)
  if (e.level === 'client-socket' || e.level === 'client-dns' || e.level === 'protocol' || e.level === 'handshake') {
    return new FsError('EUNAVAILABLE', `the SFTP connection failed: ${msg}`, opts)
  }
  switch (e.code) {
    case Status.NO_SUCH_FILE:
      return new FsError('ENOENT', `${at}no such file or directory`, opts)
    case Status.PERMISSION_DENIED:
      return new FsError('EACCES', `${at}permission denied`, opts)
    case Status.OP_UNSUPPORTED:
      return new FsError('ENOTSUP', `${at}the SFTP server does not support this operation`, opts)
    case Status.BAD_MESSAGE:
      return new FsError('EINVAL', `${at}the SFTP server refused the request`, opts)
    case Status.NO_CONNECTION:
    case Status.CONNECTION_LOST:
      return new FsError('EUNAVAILABLE', 'the SFTP connection was lost', opts)
    case Status.FAILURE:
      return new FsError('EIO', `${at}the SFTP server reported a failure`, opts)
  }
  // ssh2's own words for a channel or connection that went away.
  if (/No response from server|Not connected|Channel .*close|Unable to start subsystem|connection/i.test(msg)) {
    return new FsError('EUNAVAILABLE', 'the SFTP connection was lost', opts)
  }
  return new FsError('EIO', `${at}storage error`, opts)
}

