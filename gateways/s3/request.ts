/**
 * @module gateways/s3/request
 * One S3 request as the operations see it, and the folder helpers they share.
 */
import { isFsError } from '../../core/errors.js'
import { makeFolders as makeFoldersBelow } from '../../core/make-folders.js'
import type { HttpRequest } from '../../core/http.js'
import { parentOf } from '../../core/paths.js'
import type { FsEntry, RequestContext } from '../../core/view.js'
import type { S3Caller } from './auth/index.js'
import { noSuchBucket } from './errors.js'
import { bucketPath } from './keys.js'
import type { ObjectMetaStore } from './meta/index.js'

export interface S3Request {
  readonly req: HttpRequest
  readonly caller: S3Caller
  readonly ctx: RequestContext
  readonly meta: ObjectMetaStore
  readonly region: string
  /** Decoded; '' for the service itself (ListBuckets). */
  readonly bucket: string
  /** Decoded; '' for the bucket itself. */
  readonly key: string
}

export const codeOf = (err: unknown): string | undefined => (isFsError(err) ? err.code : undefined)

/** The bucket's folder, or NoSuchBucket. */
export async function statBucket(r: S3Request): Promise<FsEntry> {
  const path = bucketPath(r.bucket)
  try {
    const e = await r.caller.fs.stat(r.ctx, path)
    if (e.kind === 'dir') return e
  } catch (err) {
    if (!['ENOENT', 'ENOTDIR'].includes(codeOf(err) ?? '')) throw err
  }
  throw noSuchBucket(r.bucket)
}

/**
 * Makes the folders from the bucket down to `dir` that are missing (the bucket must
 * exist: NoSuchBucket). Returns those it made, deepest last, so a failed write can
 * take them back.
 */
export async function makeFolders(r: S3Request, dir: string): Promise<string[]> {
  await statBucket(r)
  return makeFoldersBelow(r.caller.fs, r.ctx, dir, bucketPath(r.bucket))
}

/**
 * Cleanup runs after the request may be over (a client that went away aborted its
 * signal, and an aborted context is refused at once): its own context, never cancelled.
 */
const cleanupCtx = (r: S3Request): RequestContext => ({ requestId: r.ctx.requestId, signal: new AbortController().signal })

/** Removes folders `made` (deepest first) if they are still empty; errors are ignored. */
export async function unmakeFolders(r: S3Request, made: readonly string[]): Promise<void> {
  const ctx = cleanupCtx(r)
  for (const p of [...made].reverse()) {
    try {
      await r.caller.fs.rmdir(ctx, p)
    } catch {
      return
    }
  }
}

/**
 * After a delete: a prefix with nothing left under it vanishes, as on S3, so the empty
 * folders from `path`'s parent up to (not including) the bucket are removed.
 */
export async function removeEmptyParents(r: S3Request, path: string): Promise<void> {
  const bucket = bucketPath(r.bucket)
  const ctx = cleanupCtx(r)
  for (let p = parentOf(path); p !== bucket && p.startsWith(bucket + '/'); p = parentOf(p)) {
    try {
      await r.caller.fs.rmdir(ctx, p)
    } catch {
      return // not empty (or gone, or refused): the folders above hold it
    }
  }
}
