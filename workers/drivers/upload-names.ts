/**
 * @module workers/drivers/upload-names
 * Where drivers put an upload's bytes before it is complete: a hidden temporary
 * file in the target's folder, `.filegate-<random>.part`, renamed onto the target
 * at the end. Every driver names it the same way and leaves it out of listings, so
 * a half-written upload is never seen, whatever the backend.
 */
import { randomBytes } from 'node:crypto'
import type { OpContext } from '../../core/driver.js'
import { isTempUploadName, joinPath, parentOf } from '../../core/paths.js'

/** The names' pattern is core's: every door refuses such a name from a client (core/paths.ts). */
export { isTempUploadName }

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
