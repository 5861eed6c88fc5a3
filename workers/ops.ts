/**
 * @module workers/ops
 * Operations built once on top of any Driver: the emulations a backend may lack
 * (mkdir -p, recursive delete, move by copy + delete) and the contract's rules for
 * mv, touch and upload (docs/api.md, "Files"). Branches on a method's presence,
 * never on the driver's kind.
 */
import type { Driver, Entry, OpContext, WriteOptions } from '../core/driver.js'
import { FsError } from '../core/errors.js'
import { isWithin, joinPath, parentOf } from '../core/paths.js'

/** Long operations check between steps: a caller that left (a `cancel` from the pool) stops them. */
function throwIfCancelled(ctx: OpContext, path: string): void {
  if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled', { path })
}

/** Stat that answers null instead of ENOENT. */
export async function statOrNull(ctx: OpContext, d: Driver, path: string): Promise<Entry | null> {
  try {
    return await d.stat(ctx, path)
  } catch (err) {
    if ((err as FsError).code === 'ENOENT') return null
    throw err
  }
}

/** Every entry of a directory, sorted by name (code-unit order, stable across backends). */
export async function listSorted(ctx: OpContext, d: Driver, dir: string): Promise<Entry[]> {
  const all: Entry[] = []
  for await (const page of d.list(ctx, dir)) all.push(...page)
  return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** A directory listing; a file is ENOTDIR. */
export async function listDir(ctx: OpContext, d: Driver, dir: string): Promise<Entry[]> {
  const st = await d.stat(ctx, dir)
  if (st.kind !== 'dir') throw new FsError('ENOTDIR', `${dir}: not a directory`, { path: dir })
  return listSorted(ctx, d, dir)
}

/** One directory. With `exclusive`, an existing directory is EEXIST. */
export async function mkdirOne(ctx: OpContext, d: Driver, dir: string, exclusive: boolean): Promise<void> {
  if (exclusive) await refuseExisting(ctx, d, dir)
  return d.mkdir(ctx, dir)
}

/** mkdir -p. With `exclusive`, an existing directory is EEXIST. */
export async function mkdirp(ctx: OpContext, d: Driver, dir: string, exclusive = false): Promise<void> {
  if (exclusive) await refuseExisting(ctx, d, dir)
  if (dir === '/') return
  try {
    await d.mkdir(ctx, dir)
  } catch (err) {
    if ((err as FsError).code !== 'ENOENT') throw err
    await mkdirp(ctx, d, parentOf(dir))
    await d.mkdir(ctx, dir)
  }
}

async function refuseExisting(ctx: OpContext, d: Driver, path: string): Promise<void> {
  if (await statOrNull(ctx, d, path)) throw new FsError('EEXIST', `${path}: already exists`, { path })
}

/** Creates the parent directories of `path` when missing. */
export async function ensureParent(ctx: OpContext, d: Driver, path: string): Promise<void> {
  const parent = parentOf(path)
  const st = await statOrNull(ctx, d, parent)
  if (st === null) return mkdirp(ctx, d, parent)
  if (st.kind !== 'dir') throw new FsError('ENOTDIR', `${parent}: not a directory`, { path: parent })
}

/** Removes a file, or a directory with everything under it (depth first). */
export async function removeTree(ctx: OpContext, d: Driver, path: string): Promise<void> {
  if (path === '/') throw new FsError('EACCES', 'the root cannot be removed', { path })
  if (d.removeTree) return d.removeTree(ctx, path)
  const st = await d.stat(ctx, path)
  if (st.kind === 'dir' && !st.link) {
    for (const child of await listSorted(ctx, d, path)) await removeTree(ctx, d, child.path)
  }
  throwIfCancelled(ctx, path)
  await d.remove(ctx, path)
}

/**
 * Renames or moves. The target's parents are created. An existing target is EEXIST
 * unless `overwrite` and both are files. A directory cannot move into itself (EINVAL).
 */
export async function move(ctx: OpContext, d: Driver, from: string, to: string, overwrite: boolean): Promise<void> {
  if (from === '/') throw new FsError('EACCES', 'the root cannot be moved', { path: from })
  if (to === '/') throw new FsError('EEXIST', 'the root already exists', { path: to })
  const src = await d.stat(ctx, from)
  if (from === to) return
  if (src.kind === 'dir' && isWithin(from, to)) {
    throw new FsError('EINVAL', `cannot move ${from} into itself`, { path: to })
  }
  const dst = await statOrNull(ctx, d, to)
  if (dst && !(overwrite && src.kind === 'file' && dst.kind === 'file')) {
    throw new FsError('EEXIST', `${to}: already exists`, { path: to })
  }
  await ensureParent(ctx, d, to)
  if (d.rename) return d.rename(ctx, from, to, { overwrite })
  await copyTree(ctx, d, src, to, overwrite)
  throwIfCancelled(ctx, from) // a copy cut short must not be followed by deleting its source
  await removeTree(ctx, d, from)
}

/** Copies a file or a tree within one driver, keeping mtimes where settable. Stops when `ctx.signal` aborts. */
async function copyTree(ctx: OpContext, d: Driver, src: Entry, to: string, overwrite: boolean): Promise<void> {
  throwIfCancelled(ctx, src.path)
  if (src.kind === 'file') {
    await d.write(ctx, to, d.read(ctx, src.path), { overwrite, size: src.size, ...mtimeOf(src) })
    return
  }
  await d.mkdir(ctx, to)
  for (const child of await listSorted(ctx, d, src.path)) {
    await copyTree(ctx, d, child, joinPath(to, child.name), overwrite)
  }
}

const mtimeOf = (e: Entry): { mtimeMs?: number } => (e.mtimeMs === null ? {} : { mtimeMs: e.mtimeMs })

/** Creates an empty file (parents as needed); anything already there is left as is. */
export async function touch(ctx: OpContext, d: Driver, path: string): Promise<void> {
  if (await statOrNull(ctx, d, path)) return
  await ensureParent(ctx, d, path)
  try {
    await d.write(ctx, path, empty(), { overwrite: false, size: 0 })
  } catch (err) {
    if ((err as FsError).code !== 'EEXIST') throw err // created meanwhile: fine
  }
}

/** Writes a file, creating its parents; atomic as the driver's write is. */
export async function writeFile(
  ctx: OpContext,
  d: Driver,
  path: string,
  body: AsyncIterable<Uint8Array>,
  opts: WriteOptions,
): Promise<Entry> {
  if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
  await ensureParent(ctx, d, path)
  return d.write(ctx, path, body, opts)
}

async function* empty(): AsyncIterable<Uint8Array> {}
