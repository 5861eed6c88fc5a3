/**
 * @module workers/handles/errors
 * WORKER THREAD. Every failure of a gateway's open file is an FsError before it crosses
 * back: a full disk under its staging copy ENOSPC, anything unclassified EIO.
 */
import { FsError, isFsError, stagingError } from '../../core/errors.js'

export function asFsError(err: unknown): FsError {
  if (isFsError(err)) return err
  const staged = stagingError(err)
  if (isFsError(staged)) return staged
  return new FsError('EIO', 'internal error')
}
