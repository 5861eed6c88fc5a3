/**
 * @module workers/drivers/local
 * A folder of the server's own disk: `local` connections and `tmp` spaces.
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify,
 * 3) sessions (none here: the kernel is the session), 4) the driver, 5) factory.
 *
 * Containment: canonical paths cannot climb above `/` lexically, but a symlink
 * planted inside the folder could point anywhere. Every operation resolves the
 * real path of its target (or of its nearest existing ancestor) and refuses with
 * EACCES when it lies outside the root's real path. Listings leave out symlinks
 * that lead outside the root or nowhere, so a walk (zip, recursive rm) never meets
 * them.
 *
 * Atomic writes: bytes go to a hidden temporary file in the target's folder
 * (`.filegate-<id>.part`, never listed), which is renamed over the target (or
 * hard-linked to it when the target must not be replaced) once complete.
 */
import { constants as fsc, type Stats } from 'node:fs'
import * as fs from 'node:fs/promises'
import * as nodePath from 'node:path'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../../core/driver.js'
import { FsError, type FsErrorCode, isFsError } from '../../core/errors.js'
import { baseName } from '../../core/paths.js'
import { isTempUploadName, tempUploadName } from './upload-names.js'

// 1) Config ------------------------------------------------------------------

export interface LocalConfig {
  /** Absolute folder; the driver's `/`. */
  readonly root: string
  /** Create the root when missing (tmp spaces); otherwise a missing root is ENOENT. */
  readonly createRoot?: boolean
}

/** Bytes per read chunk: large chunks are what make loopback downloads fast (see bench). */
export const READ_CHUNK = 1024 * 1024
const LIST_PAGE = 512
const STAT_CONCURRENCY = 32

// 2) classify ----------------------------------------------------------------

const CODES: Readonly<Record<string, FsErrorCode>> = {
  ENOENT: 'ENOENT',
  EEXIST: 'EEXIST',
  ENOTDIR: 'ENOTDIR',
  EISDIR: 'EISDIR',
  ENOTEMPTY: 'ENOTEMPTY',
  EACCES: 'EACCES',
  EPERM: 'EACCES',
  EROFS: 'EACCES',
  ELOOP: 'EACCES',
  EINVAL: 'EINVAL',
  ENAMETOOLONG: 'EINVAL',
  EXDEV: 'ENOTSUP',
  EBUSY: 'EUNAVAILABLE',
  EMFILE: 'EUNAVAILABLE',
  ENFILE: 'EUNAVAILABLE',
}

const MESSAGES: Partial<Record<FsErrorCode, string>> = {
  ENOENT: 'no such file or directory',
  EEXIST: 'already exists',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  ENOTEMPTY: 'directory not empty',
  EACCES: 'permission denied',
}

/** Node fs error → FsError. The message names the storage path, never the server's folder. */
export function classify(err: unknown, path: string): FsError {
  if (isFsError(err)) return err
  const sys = (err as { code?: string }).code
  if (sys === 'ENOSPC') return new FsError('EIO', `no space left on the storage (${path})`, { path, cause: err })
  if (sys === 'ABORT_ERR') return new FsError('ECANCELED', 'cancelled', { path, cause: err })
  const code = (sys !== undefined && CODES[sys]) || 'EIO'
  return new FsError(code, `${path}: ${MESSAGES[code] ?? 'storage error'}`, { path, cause: err })
}

// 4) The driver --------------------------------------------------------------

const FEATURES: Features = { emptyDirs: true, atomicRename: true, rangeRead: true, mtimePrecisionMs: 1 }

class LocalDriver implements Driver {
  readonly kind = 'local'
  readonly features = FEATURES
  readonly #root: string
  readonly #realRoot: string

  constructor(root: string, realRoot: string) {
    this.#root = root
    this.#realRoot = realRoot
  }

  async stat(_ctx: OpContext, path: string): Promise<Entry> {
    const abs = await this.#resolve(path)
    try {
      const lst = await fs.lstat(abs)
      return lst.isSymbolicLink() ? toEntry(path, await fs.stat(abs), true) : toEntry(path, lst)
    } catch (err) {
      throw classify(err, path)
    }
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const abs = await this.#resolve(dir)
    let handle: import('node:fs').Dir
    try {
      handle = await fs.opendir(abs, { bufferSize: LIST_PAGE })
    } catch (err) {
      throw classify(err, dir)
    }
    let names: string[] = []
    try {
      for await (const d of handle) {
        if (isTempUploadName(d.name)) continue
        names.push(d.name)
        if (names.length >= LIST_PAGE) {
          yield await this.#entries(ctx, dir, names)
          names = []
        }
      }
      if (names.length > 0) yield await this.#entries(ctx, dir, names)
    } catch (err) {
      throw classify(err, dir)
    }
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const abs = await this.#resolve(path)
    let fh: fs.FileHandle
    try {
      fh = await fs.open(abs, fsc.O_RDONLY)
    } catch (err) {
      throw classify(err, path)
    }
    try {
      const st = await fh.stat()
      if (st.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      let pos = range?.start ?? 0
      const end = Math.min(range?.end ?? Infinity, st.size - 1) // inclusive
      while (pos <= end) {
        if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled', { path })
        // A fresh buffer per chunk: the consumer may transfer it to another thread.
        const buf = Buffer.allocUnsafeSlow(Math.min(READ_CHUNK, end - pos + 1))
        const { bytesRead } = await fh.read(buf, 0, buf.length, pos)
        if (bytesRead === 0) break // the file shrank while we read it
        pos += bytesRead
        yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead)
      }
    } catch (err) {
      throw classify(err, path)
    } finally {
      await fh.close()
    }
  }

  async write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<Entry> {
    const abs = await this.#resolve(path)
    const dir = nodePath.dirname(abs)
    const existing = await fs.stat(abs).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null
      throw classify(err, path)
    })
    if (existing?.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
    if (existing && opts.overwrite === false) throw new FsError('EEXIST', `${path}: already exists`, { path })
    const tmp = nodePath.join(dir, tempUploadName())
    let fh: fs.FileHandle | null = null
    try {
      fh = await fs.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o644)
      for await (const chunk of body) {
        if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled', { path })
        await writeAll(fh, chunk)
      }
      if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled', { path })
      await fh.close()
      fh = null
      if (opts.mtimeMs !== undefined) await fs.utimes(tmp, new Date(), new Date(opts.mtimeMs))
      if (opts.overwrite === false) {
        // link(2) fails if the target appeared meanwhile: an atomic "create, never replace".
        await fs.link(tmp, abs)
        await fs.unlink(tmp)
      } else {
        await fs.rename(tmp, abs)
      }
      return toEntry(path, await fs.stat(abs))
    } catch (err) {
      await fh?.close().catch(() => {})
      await fs.rm(tmp, { force: true }).catch(() => {})
      throw classify(err, path)
    }
  }

  async mkdir(_ctx: OpContext, dir: string): Promise<void> {
    const abs = await this.#resolve(dir)
    try {
      await fs.mkdir(abs, 0o755)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
        // A dangling symlink holds the name but stat() fails on it: that is EEXIST too,
        // never a raw Node error (its message would name the server's folder).
        const st = await fs.stat(abs).catch(() => null)
        if (st?.isDirectory()) return
      }
      throw classify(err, dir)
    }
  }

  async remove(_ctx: OpContext, path: string): Promise<void> {
    // The entry itself (a symlink included) is removed, never what a link points at,
    // so only its folder must lie inside the root.
    const abs = await this.#resolveLink(path)
    try {
      const st = await fs.lstat(abs)
      if (st.isDirectory()) await fs.rmdir(abs)
      else await fs.unlink(abs)
    } catch (err) {
      throw classify(err, path)
    }
  }

  async rename(_ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    const src = await this.#resolveLink(from)
    const dst = await this.#resolve(to)
    await fs.lstat(src).catch((err: unknown) => {
      throw classify(err, from)
    })
    // From here on a failure concerns the target (a missing or non-directory parent, a clash).
    try {
      const target = await fs.lstat(dst).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null
        throw err
      })
      if (target && (!opts.overwrite || target.isDirectory())) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
      await fs.rename(src, dst)
    } catch (err) {
      throw classify(err, to)
    }
  }

  async setMtime(_ctx: OpContext, path: string, mtimeMs: number): Promise<void> {
    const abs = await this.#resolve(path)
    try {
      await fs.utimes(abs, new Date(), new Date(mtimeMs))
    } catch (err) {
      throw classify(err, path)
    }
  }

  async close(): Promise<void> {}

  /** Absolute path of `path`, after checking that its real location lies inside the root. */
  async #resolve(path: string): Promise<string> {
    const abs = this.#abs(path)
    await this.#contain(abs, path)
    return abs
  }

  /** As #resolve, but a final symlink is not followed: it is the entry itself. */
  async #resolveLink(path: string): Promise<string> {
    const abs = this.#abs(path)
    if (path === '/') return abs
    await this.#contain(nodePath.dirname(abs), path)
    return abs
  }

  #abs(path: string): string {
    return path === '/' ? this.#root : nodePath.join(this.#root, path)
  }

  /** Walks up to the nearest existing ancestor and checks its real path. */
  async #contain(abs: string, path: string): Promise<void> {
    let probe = abs
    for (;;) {
      try {
        const real = await fs.realpath(probe)
        if (real !== this.#realRoot && !real.startsWith(this.#realRoot + nodePath.sep)) {
          throw new FsError('EACCES', `${path}: leads outside the storage root`, { path })
        }
        return
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if ((code === 'ENOENT' || code === 'ENOTDIR') && probe !== this.#root) {
          probe = nodePath.dirname(probe)
          continue
        }
        throw classify(err, path)
      }
    }
  }

  /** Stats a page of names; drops symlinks that lead outside the root or nowhere. */
  async #entries(_ctx: OpContext, dir: string, names: string[]): Promise<Entry[]> {
    const absDir = this.#abs(dir)
    const out: (Entry | null)[] = new Array(names.length).fill(null)
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const i = next++
        const name = names[i]!
        const abs = nodePath.join(absDir, name)
        const path = dir === '/' ? `/${name}` : `${dir}/${name}`
        try {
          const lst = await fs.lstat(abs)
          if (!lst.isSymbolicLink()) {
            out[i] = toEntry(path, lst)
            continue
          }
          const real = await fs.realpath(abs)
          if (real === this.#realRoot || real.startsWith(this.#realRoot + nodePath.sep)) out[i] = toEntry(path, await fs.stat(abs), true)
        } catch {
          // Vanished since readdir, or a dangling link: not part of the listing.
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(STAT_CONCURRENCY, names.length) }, worker))
    return out.filter((e): e is Entry => e !== null)
  }
}

async function writeAll(fh: fs.FileHandle, chunk: Uint8Array): Promise<void> {
  let off = 0
  while (off < chunk.byteLength) {
    const { bytesWritten } = await fh.write(chunk, off, chunk.byteLength - off)
    off += bytesWritten
  }
}

function toEntry(path: string, st: Stats, link = false): Entry {
  const dir = st.isDirectory()
  const e: Entry = { path, name: baseName(path), kind: dir ? 'dir' : 'file', size: dir ? 0 : st.size, mtimeMs: Math.floor(st.mtimeMs) }
  return link ? { ...e, link } : e
}

// 5) Factory -----------------------------------------------------------------

export async function createLocalDriver(cfg: LocalConfig): Promise<Driver> {
  if (!nodePath.isAbsolute(cfg.root)) throw new FsError('EINVAL', 'local root must be an absolute path')
  if (cfg.createRoot) await fs.mkdir(cfg.root, { recursive: true, mode: 0o700 })
  let real: string
  try {
    real = await fs.realpath(cfg.root)
    if (!(await fs.stat(real)).isDirectory()) throw new FsError('ENOTDIR', 'the storage root is not a folder')
  } catch (err) {
    throw isFsError(err) ? err : new FsError('ENOENT', 'the storage root folder does not exist', { cause: err })
  }
  return new LocalDriver(nodePath.resolve(cfg.root), real)
}
