/**
 * @module gateways/connection/errors
 * Every failure a gateway sees is an FsError (core/errors.ts): the pool's own refusals
 * (ApiError UNAVAILABLE when it is overloaded or closing) become EUNAVAILABLE, a full
 * disk under the view's staging files (./staging.ts, in the data folder) ENOSPC,
 * anything unclassified EIO with a generic message.
 */
import { ApiError } from '../../core/api-error.js'
import { FsError, isFsError, stagingError } from '../../core/errors.js'
import { type PermissionName, PERMISSION_VERBS } from '../../core/permissions.js'

export function asFsError(err: unknown): FsError {
  if (isFsError(err)) return err
  const staged = stagingError(err)
  if (isFsError(staged)) return staged
  if (err instanceof ApiError) {
    if (err.code === 'UNAVAILABLE') return new FsError('EUNAVAILABLE', err.message)
    if (err.code === 'RATE_LIMITED') return new FsError('EBUSY', err.message)
  }
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

/** The refusal of an operation the login's bits do not allow (`what`: the operation, when the bit's own verb does not say it). */
export const refused = (right: PermissionName, path: string, what = PERMISSION_VERBS[right]): FsError =>
  new FsError('EACCES', `this login may not ${what} (it has no ${right})`, { path })
