/**
 * @module workers/drivers/ftp/errors
 * Section 2 of the ftp driver: FTP replies and socket errors → FsError.
 */
import { FsError, isFsError } from '../../../core/errors.js'
import { socketErrorCode } from '../socket-errors.js'

// 2) classify ----------------------------------------------------------------

/**
 * basic-ftp / socket error → FsError. FTP's 550 covers "missing", "not allowed" and
 * "not that kind of entry" alike: operations look first (stat) where the difference
 * matters, and classify's 550 is ENOENT. Messages name the storage path only.
 */
export function classify(err: unknown, path?: string): FsError {
  if (isFsError(err)) return err
  const e = (err ?? {}) as { code?: unknown; message?: unknown }
  const msg = typeof e.message === 'string' ? e.message : String(err)
  const at = path === undefined ? '' : `${path}: `
  const opts = { cause: err, ...(path === undefined ? {} : { path }) }
  if (typeof e.code === 'number') {
    const c = e.code
    if (c === 530) return new FsError('EAUTH', 'the FTP server refused the credentials', opts)
    if (c === 550) return new FsError('ENOENT', `${at}no such file or directory`, opts)
    if (c === 553) return new FsError('EACCES', `${at}the FTP server refused the name`, opts)
    if (c === 452) return new FsError('ENOSPC', `${at}the FTP server has no space left`, opts)
    if (c === 552) return new FsError('EFBIG', `${at}the FTP server has no room for it`, opts)
    if (c === 421 || c === 425 || c === 426) return new FsError('EUNAVAILABLE', 'the FTP connection was lost', opts)
    if (c === 500 || c === 502 || c === 504) return new FsError('ENOTSUP', `${at}the FTP server does not support this operation`, opts)
    if (c === 501) return new FsError('EINVAL', `${at}the FTP server refused the request`, opts)
    return new FsError('EIO', `${at}the FTP server reported a failure (${c})`, opts)
  }
  const sock = socketErrorCode(err)
  if (sock !== null) return new FsError('EUNAVAILABLE', `the FTP server cannot be reached (${sock})`, opts)
  if (e.code === 'ETIMEDOUT' || /^Timeout/.test(msg)) return new FsError('ETIMEDOUT', 'the FTP server did not answer in time', opts)
  if (typeof e.code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(e.code)) {
    return new FsError('EUNAVAILABLE', `the FTP server's TLS certificate is not trusted (${e.code})`, { ...opts, retryable: false })
  }
  if (/closed|FIN packet|transmission error|transfer strategies|no data connection/i.test(msg)) {
    return new FsError('EUNAVAILABLE', 'the FTP connection was lost', opts)
  }
  return new FsError('EIO', `${at}storage error`, opts)
}

/** The FTP reply code of a basic-ftp error (a number), or a socket error's code. */
export const ftpCode = (err: unknown): unknown => (err as { code?: unknown })?.code

