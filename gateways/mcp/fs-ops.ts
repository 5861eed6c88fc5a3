/**
 * @module gateways/mcp/fs-ops
 * What the tools need beyond one `View` call: a listing within limits, a whole file
 * written at once (atomically, parents made), a tree walked. Each checks
 * the request's signal between storage calls, so a cancelled tool stops there.
 */
import { FsError } from '../../core/errors.js'
import { makeFolders } from '../../core/make-folders.js'
import { joinPath, parentOf } from '../../core/paths.js'
import type { FsEntry, OpenFlags, RequestContext, View } from '../../core/view.js'

export const READ: OpenFlags = { read: true, write: false, append: false, create: false, truncate: false, exclusive: false }
const PUT: OpenFlags = { read: false, write: true, append: false, create: true, truncate: true, exclusive: false }
const CREATE: OpenFlags = { read: false, write: true, append: false, create: true, truncate: false, exclusive: true }

export function checkCancelled(ctx: RequestContext): void {
  if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled by the client')
}

/** Entries asked for at once: the most a page may hold (one backend listing for most folders). */
const PAGE = 100_000

/** Thrown by `listAll` when its deadline passes (not a failure of the storage: the caller says what it found). */
export class DeadlineReached extends Error {}

/**
 * A directory's entries, up to `max` (then `cut`: there are more). Asked in the largest
 * pages there are, so a folder costs one backend listing, and the snapshot a further page
 * would need is never relied on. With `deadline` (ms since the epoch), checked before each
 * page and during it (the pool call is cancelled when it passes): DeadlineReached.
 */
export async function listAll(fs: View, ctx: RequestContext, dir: string, max: number, deadline?: number): Promise<{ entries: FsEntry[]; cut: boolean }> {
  const entries: FsEntry[] = []
  let cursor: string | null = null
  if (max < 1) throw new RangeError('listAll: max must be at least 1')
  do {
    checkCancelled(ctx)
    let pageCtx = ctx
    if (deadline !== undefined) {
      const left = deadline - Date.now()
      if (left <= 0) throw new DeadlineReached()
      pageCtx = { ...ctx, signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(left)]) }
    }
    let page
    try {
      page = await fs.list(pageCtx, dir, { cursor, limit: Math.min(PAGE, max - entries.length) })
    } catch (err) {
      if (pageCtx !== ctx && pageCtx.signal.aborted && !ctx.signal.aborted) throw new DeadlineReached()
      throw err
    }
    entries.push(...page.entries)
    cursor = page.cursor
  } while (cursor !== null && entries.length < max)
  return { entries, cut: cursor !== null }
}

/** Writes a whole file atomically (it replaces the old one at `close`), parents made. */
export async function writeFile(fs: View, ctx: RequestContext, path: string, data: Uint8Array): Promise<void> {
  await makeFolders(fs, ctx, parentOf(path))
  const h = await fs.open(ctx, path, PUT)
  try {
    if (data.byteLength > 0) await h.write(0, data)
    checkCancelled(ctx)
  } catch (err) {
    h.abort()
    throw err
  }
  await h.close()
}

/** Creates an empty file unless something is there. @returns whether it was created. */
export async function touchFile(fs: View, ctx: RequestContext, path: string): Promise<boolean> {
  try {
    const e = await fs.stat(ctx, path)
    if (e.kind === 'dir') throw new FsError('EISDIR', `${path} is a folder`, { path })
    return false
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ENOENT') throw err
  }
  await makeFolders(fs, ctx, parentOf(path))
  try {
    await (await fs.open(ctx, path, CREATE)).close()
    return true
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EEXIST') return false
    throw err
  }
}

export interface WalkLimits {
  readonly maxDepth: number
  readonly maxVisited: number
  readonly deadline: number
}

/**
 * Visits the entries under `dir`, breadth first, within the limits. Links to folders
 * are visited, not descended into. @returns why the walk stopped early, or null.
 */
export async function walk(
  fs: View,
  ctx: RequestContext,
  dir: string,
  limits: WalkLimits,
  visit: (path: string, e: FsEntry) => boolean,
): Promise<string | null> {
  let visited = 0
  let level = [dir]
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > limits.maxDepth) return `stopped at depth ${limits.maxDepth}`
    const next: string[] = []
    for (const d of level) {
      let listed
      try {
        listed = await listAll(fs, ctx, d, limits.maxVisited - visited, limits.deadline)
      } catch (err) {
        if (err instanceof DeadlineReached) return 'stopped: the time limit was reached'
        throw err
      }
      const { entries, cut } = listed
      for (const e of entries) {
        const p = joinPath(d, e.name)
        if (!visit(p, e)) return 'stopped: enough matches'
        if (e.kind === 'dir' && !e.link) next.push(p)
      }
      visited += entries.length
      if (cut || visited >= limits.maxVisited) return `stopped after ${limits.maxVisited} entries`
    }
    level = next
  }
  return null
}
