/**
 * @module core/make-folders
 * `mkdir -p` on a View, for the gateways whose protocols make parent folders
 * implicitly (an S3 key, an MCP `write`): one mechanism, whatever door asks.
 */
import { FsError } from './errors.js'
import { parentOf } from './paths.js'
import type { RequestContext, View } from './view.js'

/**
 * Makes `dir` and those of its parents below `base` that are missing (`base` itself is
 * never made: it must exist). A folder someone else makes meanwhile counts as there.
 * The request's signal is checked between storage calls.
 * @returns the folders made, top down (to remove again, deepest first, when what needed them failed); empty when `dir` was there
 * @throws FsError ENOTDIR when `dir` or a parent is a file
 */
export async function makeFolders(fs: View, ctx: RequestContext, dir: string, base = '/'): Promise<string[]> {
  if (dir === base || dir === '/') return []
  const first = await made(fs, ctx, dir)
  if (first !== null) return first ? [dir] : []
  // A parent is missing (ENOENT): make the parents first, then try again.
  const above = await makeFolders(fs, ctx, parentOf(dir), base)
  return (await made(fs, ctx, dir, true)) ? [...above, dir] : above
}

/** @returns true when it made `dir`, false when a folder is there; null (first try only) when a parent is missing */
async function made(fs: View, ctx: RequestContext, dir: string, again = false): Promise<boolean | null> {
  if (ctx.signal.aborted) throw new FsError('ECANCELED', 'the request was cancelled')
  try {
    await fs.mkdir(ctx, dir)
    return true
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'EEXIST') {
      if ((await fs.stat(ctx, dir)).kind !== 'dir') throw new FsError('ENOTDIR', `${dir} is a file, not a folder`, { path: dir })
      return false
    }
    if (code === 'ENOENT' && !again) return null
    throw err
  }
}
