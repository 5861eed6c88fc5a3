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
import type { BackendAbilities } from '../core/messages.js'

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
 * Renames or moves. The target's parents are created (`parents` false: they must exist,
 * ENOENT otherwise). An existing target is EEXIST unless `overwrite` and both are files.
 * A directory cannot move into itself (EINVAL).
 */
export async function move(ctx: OpContext, d: Driver, from: string, to: string, overwrite: boolean, parents = true): Promise<void> {
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
  await (parents ? ensureParent(ctx, d, to) : requireParent(ctx, d, to))
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

/** Creates an empty file (`parents`: missing parents made, else ENOENT); anything already there is left as is. */
export async function touch(ctx: OpContext, d: Driver, path: string, parents = true): Promise<void> {
  if (await statOrNull(ctx, d, path)) return
  await (parents ? ensureParent(ctx, d, path) : requireParent(ctx, d, path))
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

/**
 * Makes the missing folders between `top` (which must exist: ENOENT otherwise) and the
 * parent of `path`. Returns those it found missing and made, top down, for
 * `unmakeFolders` when what needed them failed.
 * @throws ENOENT (`top` is missing) | ENOTDIR (a file on the way)
 */
export async function makeParentsBelow(ctx: OpContext, d: Driver, path: string, top: string): Promise<string[]> {
  const missing: string[] = []
  for (let dir = parentOf(path); ; dir = parentOf(dir)) {
    const st = await statOrNull(ctx, d, dir)
    if (st !== null) {
      if (st.kind !== 'dir') throw new FsError('ENOTDIR', `${dir}: not a directory`, { path: dir })
      break
    }
    if (dir === top || dir === '/' || !isWithin(top, dir)) throw new FsError('ENOENT', `${dir}: no such directory`, { path: dir })
    missing.unshift(dir)
  }
  for (const dir of missing) {
    throwIfCancelled(ctx, dir)
    await d.mkdir(ctx, dir)
  }
  return missing
}

/**
 * Removes folders `made` (`makeParentsBelow`), deepest first, while they are empty (a
 * file someone else put in meanwhile keeps them: ENOTEMPTY ends it, as any error does).
 */
export async function unmakeFolders(ctx: OpContext, d: Driver, made: readonly string[]): Promise<void> {
  for (const dir of [...made].reverse()) {
    try {
      await d.remove(ctx, dir)
    } catch {
      return
    }
  }
}

async function* empty(): AsyncIterable<Uint8Array> {}

// The protocol gateways' operations (core/view.ts): one step each, no parents created.

/** The entry itself (a final link not followed) where the driver tells links apart. */
export function lstat(ctx: OpContext, d: Driver, path: string): Promise<Entry> {
  return d.lstat ? d.lstat(ctx, path) : d.stat(ctx, path)
}

/** Removes one file (`kind` 'file': a directory is EISDIR) or one empty directory ('dir': anything else is ENOTDIR). */
export async function removeOne(ctx: OpContext, d: Driver, path: string, kind: 'file' | 'dir'): Promise<void> {
  if (path === '/') throw new FsError('EACCES', 'the root cannot be removed', { path })
  const st = await lstat(ctx, d, path)
  const isDir = st.kind === 'dir' && !st.link
  if (kind === 'file' && isDir) throw new FsError('EISDIR', `${path}: is a directory`, { path })
  if (kind === 'dir' && !isDir) throw new FsError('ENOTDIR', `${path}: not a directory`, { path })
  await d.remove(ctx, path)
}

/** The parent of `path` must be an existing directory. @throws ENOENT | ENOTDIR */
export async function requireParent(ctx: OpContext, d: Driver, path: string): Promise<void> {
  const parent = parentOf(path)
  const st = await statOrNull(ctx, d, parent)
  if (st === null) throw new FsError('ENOENT', `${parent}: no such directory`, { path: parent })
  if (st.kind !== 'dir') throw new FsError('ENOTDIR', `${parent}: not a directory`, { path: parent })
}

/** Cuts or extends a file to `size` bytes: the driver's own, else a rewrite (atomic as `write`). */
export async function truncateFile(ctx: OpContext, d: Driver, path: string, size: number): Promise<void> {
  if (!Number.isSafeInteger(size) || size < 0) throw new FsError('EINVAL', 'a size is a whole number of bytes', { path })
  const st = await d.stat(ctx, path)
  if (st.kind !== 'file') throw new FsError('EISDIR', `${path}: is a directory`, { path })
  if (d.truncate) return d.truncate(ctx, path, size)
  if (st.size === size) return
  const kept = Math.min(st.size, size)
  const body = async function* (): AsyncIterable<Uint8Array> {
    if (kept > 0) yield* d.read(ctx, path, { start: 0, end: kept - 1 })
    yield* zeros(size - kept)
  }
  await d.write(ctx, path, body(), { overwrite: true, size })
}

/** `n` zero bytes, in chunks of at most 1 MiB. */
export async function* zeros(n: number): AsyncIterable<Uint8Array> {
  const CHUNK = 1024 * 1024
  for (let left = n; left > 0; left -= CHUNK) yield new Uint8Array(Math.min(CHUNK, left))
}

/**
 * Copies one file: inside the backend where the driver can, else streamed read → write
 * (atomic as `write`). The target's parent must exist.
 * @throws ENOENT | EISDIR | EEXIST (overwrite false, or a directory in the way)
 */
export async function copyFile(ctx: OpContext, d: Driver, from: string, to: string, overwrite: boolean): Promise<Entry> {
  const src = await d.stat(ctx, from)
  if (src.kind !== 'file') throw new FsError('EISDIR', `${from}: is a directory`, { path: from })
  if (to === '/') throw new FsError('EISDIR', '/: is a directory', { path: to })
  const dst = await statOrNull(ctx, d, to)
  if (dst && dst.kind === 'dir') throw new FsError('EISDIR', `${to}: is a directory`, { path: to })
  if (dst && !overwrite) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
  await requireParent(ctx, d, to)
  if (d.copy) return d.copy(ctx, from, to, { overwrite })
  return d.write(ctx, to, d.read(ctx, from), { overwrite, size: src.size })
}

/** What a protocol gateway may offer over this driver. */
export function abilitiesOf(d: Driver): BackendAbilities {
  return {
    setTimes: d.setMtime !== undefined,
    modes: d.setMode !== undefined,
    serverSideCopy: d.copy !== undefined,
    emptyDirs: d.features.emptyDirs,
    inPlaceWrites: d.writeAt !== undefined,
    metadata: d.metadata !== undefined,
  }
}
