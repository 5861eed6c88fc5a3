/**
 * @module gateways/connection/errors
 * Every failure a gateway sees is an FsError (core/errors.ts): the pool's and the
 * transfer limits' refusals are FsErrors already (EOVERLOAD, EBUSY), a full disk under
 * the view's staging files (workers/handles/staging.ts, in the data folder) becomes ENOSPC, anything
 * unclassified EIO with a generic message.
 */
import { FsError, isFsError, stagingError } from '../../core/errors.js'

export function asFsError(err: unknown): FsError {
  if (isFsError(err)) return err
  const staged = stagingError(err)
  if (isFsError(staged)) return staged
  return new FsError('EIO', 'internal error')
}

/** Runs `fn`, turning whatever it throws into an FsError. */
export async function fsCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw asFsError(err)
  }
}
