/**
 * @module workers/drivers/upload-names
 * Where drivers put an upload's bytes before it is complete: a hidden temporary
 * file in the target's folder, `.filegate-<random>.part`, renamed onto the target
 * at the end. Every driver names it the same way and leaves it out of listings, so
 * a half-written upload is never seen, whatever the backend.
 */
import { randomBytes } from 'node:crypto'
import type { OpContext } from '../../core/driver.js'
import { joinPath, parentOf } from '../../core/paths.js'

const TEMP_NAME = /^\.filegate-[A-Za-z0-9_-]+\.part$/

/**
 * A fresh temporary name (no folder) for an upload to `path`, announced (`ctx.temp`,
 * as a storage path) before the driver creates it: a thread that dies mid-upload
 * leaves it to the pool to remove (workers/pool.ts).
 */
export function tempUploadName(ctx: OpContext, path: string): string {
  const name = `.filegate-${randomBytes(9).toString('base64url')}.part`
  ctx.temp?.(joinPath(parentOf(path), name))
  return name
}

/** True for the names of uploads in progress (or left by a crash): never listed. */
export function isTempUploadName(name: string): boolean {
  return TEMP_NAME.test(name)
}
