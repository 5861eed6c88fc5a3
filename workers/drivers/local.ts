/**
 * @module workers/drivers/local
 * A folder of the server's own disk: `local` connections and `tmp` spaces.
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify,
 * 3) sessions (none here: the kernel is the session), 4) the driver, 5) factory.
 *
 * Containment: canonical paths cannot climb above `/` lexically, but a symlink
 * planted inside the folder could point anywhere, and could be swapped while an
 * operation runs. Every operation pins what it acts on (local/pin.ts): the entry's
 * folder for what acts on a name (write, mkdir, remove, rename: the final name is
 * never followed), the object itself for what follows links (stat, read, list,
 * setMtime), each checked to lie inside the root's real path (EACCES otherwise)
 * and then used through the pin, never through the path string again. Listings
 * leave out symlinks that lead outside the root or nowhere, so a walk (zip,
 * recursive rm) never meets them; each step of a walk is an operation of its own,
 * pinned again. docs/local-storage-security.md says what holds where.
 *
 * Atomic writes: bytes go to a hidden temporary file in the target's folder
 * (`.filegate-<id>.part`, never listed), which is renamed over the target (or
 * hard-linked to it when the target must not be replaced) once complete. It is
 * created, committed and cleaned up through its folder's pin: a folder moved or
 * removed meanwhile fails the upload and keeps no temporary file, and removing a
 * folder removes the hidden files of uploads in progress there. Those a whole-process
 * crash left are swept (local/temp-sweep.ts): when a root is first used in a worker
 * thread and hourly while it is used, once unchanged for an hour; a live upload
 * touches its file every few minutes, so it is never taken for one.
 */
import { constants as fsc, type Stats } from 'node:fs'
import * as fs from 'node:fs/promises'
import * as nodePath from 'node:path'
import type { ByteRange, Driver, Entry, Features, OpContext, Space, WriteOptions } from '../../core/driver.js'
import { FsError, type FsErrorCode, isFsError } from '../../core/errors.js'
import { baseName, parentOf } from '../../core/paths.js'
import { createPathPinner, createPinner, type Pin, type PinOptions, type Pinner } from './local/pin.js'
import { TEMP_SWEEP_DEFAULTS, type TempSweepOptions, liveUpload, sweepIfDue } from './local/temp-sweep.js'
import { isTempUploadName, tempUploadName } from './upload-names.js'
import { inParallel } from '../inflight.js'

// 1) Config ------------------------------------------------------------------

export interface LocalConfig {
  /** Absolute folder; the driver's `/`. */
  readonly root: string
  /** Create the root when missing (tmp spaces); otherwise a missing root is ENOENT. */
  readonly createRoot?: boolean
  /** 'path' forces the portable containment of systems without /proc/self/fd (for tests). */
  readonly pinning?: 'auto' | 'path'
  /** When crash debris (hidden upload files) is swept (default TEMP_SWEEP_DEFAULTS); false: never (for tests). */
  readonly tempSweep?: TempSweepOptions | false
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
  if (sys === 'ENOSPC') return new FsError('ENOSPC', `no space left on the storage (${path})`, { path, cause: err })
  if (sys === 'ABORT_ERR') return new FsError('ECANCELED', 'cancelled', { path, cause: err })
  const code = (sys !== undefined && CODES[sys]) || 'EIO'
  return new FsError(code, `${path}: ${MESSAGES[code] ?? 'storage error'}`, { path, cause: err })
}

// 4) The driver --------------------------------------------------------------

const FEATURES: Features = { emptyDirs: true, atomicRename: true, rangeRead: true, mtimePrecisionMs: 1, refusedNameChars: '' }

/** The mode of a file an upload makes (less the process's umask). */
const NEW_FILE_MODE = 0o644

const ROOT_REFUSED = (path: string): FsError => new FsError('EACCES', 'the root cannot be removed or moved', { path })

class LocalDriver implements Driver {
  readonly kind = 'local'
  readonly features = FEATURES
  readonly #realRoot: string
  readonly #pinner: Pinner
  readonly #sweep: TempSweepOptions | false

  constructor(realRoot: string, pinner: Pinner, sweep: TempSweepOptions | false) {
    this.#realRoot = realRoot
    this.#pinner = pinner
    this.#sweep = sweep
    this.sweepDue()
  }

  /** Sweeps the crash debris of the root in the background if this thread has not lately. @returns the sweep, for tests */
  sweepDue(): Promise<number> | null {
    return this.#sweep === false ? null : sweepIfDue(this.#realRoot, this.#sweep)
  }

  async stat(_ctx: OpContext, path: string): Promise<Entry> {
    return this.#pinned(path, { follow: false }, async (p) => {
      const st = await p.stat()
      if (!st.isSymbolicLink()) return toEntry(path, st)
      // Pinned again, following: checked on its own, whatever the link says by now.
      return this.#pinned(path, {}, async (target) => toEntry(path, await target.stat(), true))
    })
  }

  async lstat(_ctx: OpContext, path: string): Promise<Entry> {
    return this.#pinned(path, { follow: false }, async (p) => {
      const st = await p.stat()
      if (!st.isSymbolicLink()) return toEntry(path, st)
      // A link is shown only when its target lies inside (pinned on its own, like stat).
      await this.#pinned(path, {}, async () => {})
      return { ...toEntry(path, st), kind: 'file', link: true }
    })
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const d = await this.#pin(dir, { dir: true })
    try {
      let handle: import('node:fs').Dir
      try {
        handle = await fs.opendir(d.at, { bufferSize: LIST_PAGE })
      } catch (err) {
        throw classify(err, dir)
      }
      let names: string[] = []
      try {
        for await (const e of handle) {
          if (isTempUploadName(e.name)) continue
          names.push(e.name)
          if (names.length >= LIST_PAGE) {
            yield await this.#entries(ctx, d, dir, names)
            names = []
          }
        }
        if (names.length > 0) yield await this.#entries(ctx, d, dir, names)
      } catch (err) {
        throw classify(err, dir)
      }
    } finally {
      d.release()
    }
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const fh = await this.#pinned(path, {}, (p) => fs.open(p.at, fsc.O_RDONLY))
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
    if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
    return this.#inParent(path, async (dir, name) => {
      await this.#mayWrite(dir, name, path, opts.overwrite !== false)
      this.sweepDue()
      const tmpName = tempUploadName(ctx, path)
      const tmp = dir.child(tmpName)
      let fh: fs.FileHandle | null = null
      let ended = (): void => {}
      try {
        fh = await fs.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, NEW_FILE_MODE)
        const open = fh
        ended = liveUpload(nodePath.join(this.#realRoot, parentOf(path), tmpName), () => open.utimes(new Date(), new Date()))
        for await (const chunk of body) {
          if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled', { path })
          await writeAll(fh, chunk)
        }
        await this.#publish(ctx, dir, tmp, name, path, opts.overwrite !== false)
        ended() // no more heartbeats on the file: it has its name
        // A time asked for is set once the file has its name, through its descriptor: a hidden
        // file with an old time would look like debris to another thread's sweep (temp-sweep.ts).
        if (opts.mtimeMs !== undefined) await open.utimes(new Date(), new Date(opts.mtimeMs))
        await fh.close()
        fh = null
        return toEntry(path, await fs.lstat(dir.child(name)))
      } catch (err) {
        await fh?.close().catch(() => {})
        // Through the folder's descriptor: found wherever the folder went meanwhile.
        await fs.unlink(tmp).catch(() => {})
        throw err
      } finally {
        ended()
      }
    })
  }

  /**
   * A file of the server's own disk (a staged upload) made the content of `path` with no
   * byte copied: hard-linked under a hidden temporary name into the target's pinned folder,
   * then committed as `write` commits, through that folder's pin. Only a regular file
   * that is still the one opened (its name not swapped meanwhile) is taken; it gets the
   * mode `write` gives a new file, and the time of now. ENOTSUP when the link cannot be
   * made (another file system, or one without hard links): the caller writes the bytes.
   */
  async adopt(ctx: OpContext, path: string, file: string, opts: WriteOptions = {}): Promise<Entry> {
    if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
    const src = await fs.open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW)
    try {
      const st = await src.stat()
      if (!st.isFile()) throw new FsError('EINVAL', 'only a regular file can be adopted', { path })
      return await this.#inParent(path, async (dir, name) => {
        await this.#mayWrite(dir, name, path, opts.overwrite !== false)
        this.sweepDue()
        const tmp = dir.child(tempUploadName(ctx, path))
        try {
          try {
            await fs.link(file, tmp)
          } catch (err) {
            const sys = (err as NodeJS.ErrnoException).code
            if (sys === 'EXDEV' || sys === 'EPERM' || sys === 'ENOTSUP' || sys === 'EOPNOTSUPP' || sys === 'EMLINK') {
              throw new FsError('ENOTSUP', 'the file cannot be linked into this storage', { path, cause: err })
            }
            throw err
          }
          const linked = await fs.lstat(tmp)
          if (linked.ino !== st.ino || linked.dev !== st.dev) throw new FsError('EIO', 'the file to adopt changed under its name', { path })
          // Through the descriptor, never a name: the file becomes what `write` makes, and not debris to a sweep (temp-sweep.ts).
          await src.chmod(NEW_FILE_MODE & ~process.umask())
          await src.utimes(new Date(), new Date())
          await this.#publish(ctx, dir, tmp, name, path, opts.overwrite !== false)
          if (opts.mtimeMs !== undefined) await src.utimes(new Date(), new Date(opts.mtimeMs))
          return toEntry(path, await fs.lstat(dir.child(name)))
        } catch (err) {
          await fs.unlink(tmp).catch(() => {})
          throw err
        }
      })
    } catch (err) {
      throw classify(err, path)
    } finally {
      await src.close()
    }
  }

  /** What `write` (and `copy`, `adopt`) may replace at `name`: not a folder; nothing at all without `overwrite` (EEXIST). */
  async #mayWrite(dir: Pin, name: string, path: string, overwrite: boolean): Promise<void> {
    const existing = await this.#target(dir, name, path)
    if (existing?.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
    if (existing && !overwrite) throw new FsError('EEXIST', `${path}: already exists`, { path })
  }

  /** Gives the complete hidden file `tmp` its name in the pinned `dir`: replacing what is there, or (not `overwrite`) only where nothing is. */
  async #publish(ctx: OpContext, dir: Pin, tmp: string, name: string, path: string, overwrite: boolean): Promise<void> {
    if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled', { path })
    // The folder was moved or removed meanwhile: its old path no longer names it.
    if (!dir.inPlace()) throw new FsError('ENOENT', `${path}: the folder was moved or removed during the upload`, { path })
    if (overwrite) return fs.rename(tmp, dir.child(name))
    // link(2) fails if the target appeared meanwhile: an atomic "create, never replace".
    await fs.link(tmp, dir.child(name))
    await fs.unlink(tmp)
  }

  async mkdir(_ctx: OpContext, dir: string): Promise<void> {
    if (dir === '/') return this.#pinned(dir, { dir: true }, async () => {})
    return this.#inParent(dir, async (parent, name) => {
      try {
        await fs.mkdir(parent.child(name), 0o755)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
        // A link to a folder inside is that folder; a dangling link holds the name: EEXIST.
        const st = await this.#pinned(dir, {}, (p) => p.stat(), parent.child(name)).catch((e: FsError) => {
          if (e.code === 'EACCES') throw e
          return null
        })
        if (!st?.isDirectory()) throw err
      }
    })
  }

  async remove(_ctx: OpContext, path: string): Promise<void> {
    if (path === '/') throw ROOT_REFUSED(path)
    // The entry itself (a symlink included) is removed, never what a link points at.
    return this.#inParent(path, async (dir, name) => {
      const st = await fs.lstat(dir.child(name))
      if (!st.isDirectory()) return fs.unlink(dir.child(name))
      try {
        await fs.rmdir(dir.child(name))
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOTEMPTY') throw err
        // Hidden upload files never keep a folder alive: an upload into a removed folder fails.
        if (!(await this.#dropTempFiles(dir.child(name), path))) throw err
        await fs.rmdir(dir.child(name))
      }
    })
  }

  async rename(_ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    if (from === '/' || to === '/') throw ROOT_REFUSED(from)
    return this.#inParent(from, (src, srcName) =>
      this.#inParent(to, async (dst, dstName) => {
        await fs.lstat(src.child(srcName)).catch((err: unknown) => {
          throw classify(err, from)
        })
        // From here on a failure concerns the target (a missing or non-directory parent, a clash).
        const target = await this.#target(dst, dstName, to, false)
        if (target && (!opts.overwrite || target.isDirectory())) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
        await fs.rename(src.child(srcName), dst.child(dstName))
      }),
    )
  }

  async setMtime(_ctx: OpContext, path: string, mtimeMs: number): Promise<void> {
    return this.#pinned(path, {}, (p) => fs.utimes(p.at, new Date(), new Date(mtimeMs)))
  }

  async space(_ctx: OpContext, path: string): Promise<Space> {
    return this.#pinned(path, {}, async (p) => {
      const s = await fs.statfs(p.at)
      return {
        blockSize: s.bsize,
        totalBytes: s.blocks * s.bsize,
        freeBytes: s.bfree * s.bsize,
        availableBytes: s.bavail * s.bsize,
        totalFiles: s.files,
        freeFiles: s.ffree,
        maxNameBytes: 255,
      }
    })
  }

  /** Permission bits only: set-user-ID, set-group-ID and sticky bits are never set on the server's disk. */
  async setMode(_ctx: OpContext, path: string, mode: number): Promise<void> {
    return this.#pinned(path, {}, (p) => fs.chmod(p.at, mode & 0o777))
  }

  async truncate(_ctx: OpContext, path: string, size: number): Promise<void> {
    return this.#pinned(path, {}, async (p) => {
      if ((await p.stat()).isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      await fs.truncate(p.at, size)
    })
  }

  async writeAt(_ctx: OpContext, path: string, offset: number, data: Uint8Array): Promise<void> {
    // Opened through the pin (the file itself, checked inside the root), never created.
    const fh = await this.#pinned(path, {}, async (p) => {
      if ((await p.stat()).isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      return fs.open(p.at, fsc.O_WRONLY)
    })
    try {
      let done = 0
      while (done < data.byteLength) {
        const { bytesWritten } = await fh.write(data, done, data.byteLength - done, offset + done)
        done += bytesWritten
      }
    } catch (err) {
      throw classify(err, path)
    } finally {
      await fh.close()
    }
  }

  /** copy_file_range (or a reflink) into a hidden temporary file, committed like `write`. */
  async copy(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<Entry> {
    if (to === '/') throw new FsError('EISDIR', '/: is a directory', { path: to })
    return this.#pinned(from, {}, async (src) => {
      if ((await src.stat()).isDirectory()) throw new FsError('EISDIR', `${from}: is a directory`, { path: from })
      return this.#inParent(to, async (dir, name) => {
        await this.#mayWrite(dir, name, to, opts.overwrite)
        const tmp = dir.child(tempUploadName(ctx, to))
        try {
          await fs.copyFile(src.at, tmp, fsc.COPYFILE_EXCL | fsc.COPYFILE_FICLONE)
          await this.#publish(ctx, dir, tmp, name, to, opts.overwrite)
          return toEntry(to, await fs.lstat(dir.child(name)))
        } catch (err) {
          await fs.unlink(tmp).catch(() => {})
          throw classify(err, to)
        }
      })
    })
  }

  async close(): Promise<void> {}

  #abs(path: string): string {
    return path === '/' ? this.#realRoot : nodePath.join(this.#realRoot, path)
  }

  /** Pins `path` (or the local path `abs`, which names it); errors are classified for `path`. */
  async #pin(path: string, opts: PinOptions, abs = this.#abs(path)): Promise<Pin> {
    try {
      return await this.#pinner.pin(abs, opts)
    } catch (err) {
      throw classify(err, path)
    }
  }

  /** Runs `fn` on the pinned `path`, then releases it; errors are classified for `path`. */
  async #pinned<T>(path: string, opts: PinOptions, fn: (p: Pin) => Promise<T>, abs?: string): Promise<T> {
    const p = await this.#pin(path, opts, abs)
    try {
      return await fn(p)
    } catch (err) {
      throw classify(err, path)
    } finally {
      p.release()
    }
  }

  /** Runs `fn` on the pinned folder of `path` and the entry's name in it. */
  #inParent<T>(path: string, fn: (dir: Pin, name: string) => Promise<T>): Promise<T> {
    const abs = this.#abs(path)
    return this.#pinned(path, { dir: true }, (dir) => fn(dir, nodePath.basename(abs)), nodePath.dirname(abs))
  }

  /**
   * What a write or a move would replace at `name` in `dir`: null when nothing is there;
   * the target's stat through an inside link (the link itself is what gets replaced);
   * EACCES when the link leads outside, dangling or not. `follow` false: the link's own stat.
   */
  async #target(dir: Pin, name: string, path: string, follow = true): Promise<Stats | null> {
    const lst = await fs.lstat(dir.child(name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null
      throw err
    })
    if (!lst?.isSymbolicLink()) return lst
    try {
      const st = await this.#pinned(path, {}, (p) => p.stat(), dir.child(name))
      return follow ? st : lst
    } catch (err) {
      if ((err as FsError).code !== 'ENOENT') throw err
      return lst // dangling, and not outside: the name is taken by the link
    }
  }

  /** Removes the hidden upload files of the folder `abs`; false when something else is there. */
  async #dropTempFiles(abs: string, path: string): Promise<boolean> {
    return this.#pinned(path, { follow: false, dir: true }, async (d) => {
      const names = await fs.readdir(d.at)
      if (!names.every(isTempUploadName)) return false
      await Promise.all(
        names.map((n) =>
          fs.unlink(d.child(n)).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== 'ENOENT') throw err // gone meanwhile: its upload failed
          }),
        ),
      )
      return true
    }, abs)
  }

  /** Stats a page of names of the pinned `d`; drops symlinks that lead outside the root or nowhere. */
  async #entries(_ctx: OpContext, d: Pin, dir: string, names: string[]): Promise<Entry[]> {
    const out: (Entry | null)[] = new Array(names.length).fill(null)
    await inParallel(STAT_CONCURRENCY, names, async (name, i) => {
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`
      try {
        const lst = await fs.lstat(d.child(name))
        if (!lst.isSymbolicLink()) {
          out[i] = toEntry(path, lst)
          return
        }
        const target = await this.#pinner.pin(d.child(name))
        try {
          out[i] = toEntry(path, await target.stat(), true)
        } finally {
          target.release()
        }
      } catch {
        // Vanished since readdir, a dangling link, or one leading outside: not listed.
      }
    })
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
  const e: Entry = { path, name: baseName(path), kind: dir ? 'dir' : 'file', size: dir ? 0 : st.size, mtimeMs: Math.floor(st.mtimeMs), mode: st.mode & 0o7777 }
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
  return new LocalDriver(real, cfg.pinning === 'path' ? createPathPinner(real) : await createPinner(real), cfg.tempSweep ?? TEMP_SWEEP_DEFAULTS)
}
