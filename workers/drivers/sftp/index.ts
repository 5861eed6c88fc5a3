/**
 * @module workers/drivers/sftp
 * A folder on an SSH server, over SFTP (the `ssh2` client).
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify (errors.ts),
 * 3) sessions (session.ts), 4) the driver, 5) factory.
 *
 * Sessions: one SSH connection with one SFTP channel each, from the one
 * SessionPool (workers/sessions.ts). An operation holds its session exclusively;
 * a connection that closes or errors is marked broken, and the pool discards it.
 *
 * Speed: SFTP is request/response, so one request in flight (what `createReadStream`
 * does) is bounded by latency (~25 MB/s on loopback). Reads keep
 * READ_AHEAD requests of the server's maximum read length in flight, grouped in
 * blocks of about READ_BLOCK whose requests each fill their slice of one buffer, and
 * yield the blocks in order (owned ~1 MiB chunks, no copy); writes send the body's
 * chunks as they come, cut at the maximum write length but never joined (no copy),
 * with WRITE_AHEAD in flight. Failed uploads'
 * temporary files that a lost connection kept are deleted later
 * (workers/drivers/upload-cleanup.ts).
 *
 * Atomic writes: bytes go to a hidden temporary file in the target's folder
 * (`.filegate-<id>.part`, never listed), renamed onto the target once complete: with
 * `posix-rename@openssh.com` when the target may be replaced (atomic), and with a
 * plain SFTP rename when it must not be (OpenSSH's rename refuses an existing target,
 * so "create, never replace" is atomic too).
 */
import type { FileEntryWithStats, Stats } from 'ssh2'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../../../core/driver.js'
import { FsError, isFsError } from '../../../core/errors.js'
import { baseName } from '../../../core/paths.js'
import type { SftpSpec } from '../../../core/backend.js'
import { type PoolKnobs, SessionPool, type SessionPoolStats } from '../../sessions.js'
import { Status, classify } from './errors.js'
import { type SftpSession, type Ssh2, call, closeSession, openSession, probe, readBlock, statOrNull } from './session.js'
import { isTempUploadName, tempUploadName } from '../upload-names.js'
import { UploadCleanup } from '../upload-cleanup.js'
import { InFlight, ReadAhead } from '../../inflight.js'
import { split } from '../../rechunk.js'
import { remoteParent, remotePath } from '../remote-path.js'

export { classify } from './errors.js'
export { fingerprint } from './session.js'

// 1) Config ------------------------------------------------------------------

/** The spec's parameters (core/backend.ts documents them) and the pool's knobs. */
export interface SftpConfig extends Omit<SftpSpec, 'type'>, PoolKnobs {}

/** Read requests in flight per transfer, at most: 32 x 255 KiB = ~8 MiB (refilled from half). */
const READ_AHEAD = 32
/** Bytes per chunk a read yields (whole requests: 4 x 255 KiB with OpenSSH). */
const READ_BLOCK = 1024 * 1024
/** Write requests in flight per transfer: 32 x 255 KiB = ~8 MiB. */
const WRITE_AHEAD = 32
const LIST_PAGE = 512

// 2) classify: errors.ts. 3) Sessions: session.ts.

// 4) The driver --------------------------------------------------------------

function toEntry(path: string, st: Stats, link = false): Entry {
  const dir = st.isDirectory()
  const e: Entry = { path, name: baseName(path), kind: dir ? 'dir' : 'file', size: dir ? 0 : st.size, mtimeMs: st.mtime * 1000, mode: st.mode & 0o7777 }
  return link ? { ...e, link } : e
}

const cancelled = (path: string): FsError => new FsError('ECANCELED', 'cancelled', { path })

class SftpDriver implements Driver {
  readonly kind = 'sftp'
  readonly features: Features
  readonly #pool: SessionPool<SftpSession>
  /** Temporary files of failed uploads that could not be deleted (the connection was gone). */
  readonly #orphans: UploadCleanup<string>

  constructor(pool: SessionPool<SftpSession>, features: Features) {
    this.#pool = pool
    this.features = features
    this.#orphans = new UploadCleanup<string>({
      run: (tmp) => this.#pool.use((s) => unlinkIfThere(s, tmp), undefined, (err) => classify(err)),
    })
  }

  async stat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#with(ctx, path, async (s) => {
      const abs = remotePath(s.root, path)
      const lst = await call<Stats>((cb) => s.sftp.lstat(abs, cb))
      return lst.isSymbolicLink() ? toEntry(path, await call<Stats>((cb) => s.sftp.stat(abs, cb)), true) : toEntry(path, lst)
    })
  }

  async lstat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#with(ctx, path, async (s) => {
      const lst = await call<Stats>((cb) => s.sftp.lstat(remotePath(s.root, path), cb))
      return lst.isSymbolicLink() ? toEntry(path, lst, true) : toEntry(path, lst)
    })
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const s = await this.#pool.acquire(ctx.signal)
    let failure: FsError | undefined
    let handle: Buffer | null = null
    try {
      const abs = remotePath(s.root, dir)
      try {
        handle = await call<Buffer>((cb) => s.sftp.opendir(abs, cb))
      } catch (err) {
        // OpenSSH answers NO_SUCH_FILE for a file too (ENOTDIR maps to it).
        const st = await statOrNull(s, abs)
        if (st !== null && !st.isDirectory()) throw new FsError('ENOTDIR', `${dir}: not a directory`, { path: dir })
        throw err
      }
      let page: Entry[] = []
      for (;;) {
        if (ctx.signal.aborted) throw cancelled(dir)
        const h = handle
        const batch = await call<FileEntryWithStats[]>((cb) => s.sftp.readdir(h, cb)).catch((err: unknown) => {
          if ((err as { code?: unknown }).code === Status.EOF) return null
          throw err
        })
        if (batch === null) break
        page.push(...(await this.#entries(s, dir, batch)))
        if (page.length >= LIST_PAGE) {
          yield page
          page = []
        }
      }
      if (page.length > 0) yield page
    } catch (err) {
      failure = classify(err, dir)
      throw failure
    } finally {
      if (handle !== null) await this.#closeHandle(s, handle)
      void this.#pool.release(s, failure)
    }
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const s = await this.#pool.acquire(ctx.signal)
    let failure: FsError | undefined
    let handle: Buffer | null = null
    try {
      handle = await call<Buffer>((cb) => s.sftp.open(remotePath(s.root, path), 'r', cb))
      const h = handle
      const st = await call<Stats>((cb) => s.sftp.fstat(h, cb))
      if (st.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      const end = Math.min(range?.end ?? Infinity, st.size - 1) // inclusive
      let next = range?.start ?? 0
      // Blocks of whole requests, about READ_BLOCK each: every request reads into its
      // slice of the block's buffer, so the consumer gets owned ~1 MiB chunks without a copy.
      const blockLen = Math.max(1, Math.floor(READ_BLOCK / s.readLen)) * s.readLen
      const blocksAhead = Math.max(2, Math.ceil((READ_AHEAD * s.readLen) / blockLen))
      const ahead = new ReadAhead<Buffer>()
      const fill = (): void => {
        while (ahead.length < blocksAhead && next <= end) {
          const len = Math.min(blockLen, end - next + 1)
          ahead.push(readBlock(s, h, next, len))
          next += len
        }
      }
      fill()
      for (let p = ahead.shift(); p !== undefined; p = ahead.shift()) {
        if (ctx.signal.aborted) throw cancelled(path)
        const buf = await p
        if (buf.length === 0) break // end of file: it shrank while we read it
        if (ahead.length <= blocksAhead / 2) {
          // Refilled in batches, after the answers already received are parsed: requests
          // sent one per answer, from inside ssh2's parse loop, halve the throughput
          // (measured on loopback: ~105 vs ~200 MB/s).
          await new Promise((resolve) => setImmediate(resolve))
          fill()
        }
        yield buf
      }
    } catch (err) {
      failure = classify(err, path)
      throw failure
    } finally {
      // Requests still in flight complete before the server answers the close (SFTP
      // answers in order); their buffers are dropped.
      if (handle !== null) await this.#closeHandle(s, handle)
      void this.#pool.release(s, failure)
    }
  }

  async write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<Entry> {
    return this.#with(ctx, path, async (s) => {
      const abs = remotePath(s.root, path)
      const existing = await statOrNull(s, abs)
      if (existing?.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      if (existing && opts.overwrite === false) throw new FsError('EEXIST', `${path}: already exists`, { path })
      const tmp = `${remoteParent(abs)}/${tempUploadName(ctx, path)}`
      let handle: Buffer | null = null
      try {
        handle = await call<Buffer>((cb) => s.sftp.open(tmp, 'wx', { mode: 0o644 }, cb))
        const h = handle
        const flight = new InFlight()
        let pos = 0
        for await (const chunk of split(body, s.writeLen)) {
          if (ctx.signal.aborted) throw cancelled(path)
          await flight.below(WRITE_AHEAD)
          const at = pos
          flight.add(call((cb) => s.sftp.write(h, chunk, 0, chunk.length, at, cb)))
          pos += chunk.length
        }
        await flight.all()
        if (ctx.signal.aborted) throw cancelled(path)
        if (opts.mtimeMs !== undefined) {
          const mtime = Math.floor(opts.mtimeMs / 1000)
          await call((cb) => s.sftp.futimes(h, Math.floor(Date.now() / 1000), mtime, cb))
        }
        handle = null
        await call((cb) => s.sftp.close(h, cb))
        await this.#place(s, tmp, abs, path, opts.overwrite !== false)
      } catch (err) {
        if (handle !== null) await this.#closeHandle(s, handle)
        // Deleted now, or once the server answers again when the connection is gone.
        if (s.broken) this.#orphans.later(tmp)
        else await this.#orphans.now(tmp, () => unlinkIfThere(s, tmp))
        if (isFsError(err)) throw err
        throw (err as { code?: unknown }).code === Status.NO_SUCH_FILE
          ? new FsError('ENOENT', `${path}: the parent folder does not exist`, { path, cause: err })
          : classify(err, path)
      }
      return toEntry(path, await call<Stats>((cb) => s.sftp.stat(abs, cb)))
    })
  }

  /** In place: one SFTP handle opened without truncation, the bytes written at their offset. */
  async writeAt(ctx: OpContext, path: string, offset: number, data: Uint8Array): Promise<void> {
    return this.#with(ctx, path, async (s) => {
      const abs = remotePath(s.root, path)
      const st = await call<Stats>((cb) => s.sftp.stat(abs, cb))
      if (st.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      const h = await call<Buffer>((cb) => s.sftp.open(abs, 'r+', cb))
      try {
        const flight = new InFlight()
        for (let at = 0; at < data.byteLength; at += s.writeLen) {
          if (ctx.signal.aborted) throw cancelled(path)
          await flight.below(WRITE_AHEAD)
          const len = Math.min(s.writeLen, data.byteLength - at)
          const buf = Buffer.from(data.buffer, data.byteOffset + at, len)
          const pos = offset + at
          flight.add(call((cb) => s.sftp.write(h, buf, 0, len, pos, cb)))
        }
        await flight.all()
      } finally {
        await this.#closeHandle(s, h)
      }
    })
  }

  async mkdir(ctx: OpContext, dir: string): Promise<void> {
    return this.#with(ctx, dir, async (s) => {
      const abs = remotePath(s.root, dir)
      try {
        await call((cb) => s.sftp.mkdir(abs, { mode: 0o755 }, cb))
      } catch (err) {
        if ((err as { code?: unknown }).code !== Status.FAILURE) throw err
        const st = await statOrNull(s, abs)
        if (st?.isDirectory()) return
        if (st !== null) throw new FsError('EEXIST', `${dir}: already exists`, { path: dir })
        // A dangling symlink holds the name.
        if ((await statOrNull(s, abs, false)) !== null) throw new FsError('EEXIST', `${dir}: already exists`, { path: dir })
        throw err
      }
    })
  }

  async remove(ctx: OpContext, path: string): Promise<void> {
    return this.#with(ctx, path, async (s) => {
      const abs = remotePath(s.root, path)
      // The entry itself (a symlink included) is removed, never what a link points at.
      const lst = await call<Stats>((cb) => s.sftp.lstat(abs, cb))
      if (!lst.isDirectory()) return call((cb) => s.sftp.unlink(abs, cb))
      try {
        await call((cb) => s.sftp.rmdir(abs, cb))
      } catch (err) {
        // OpenSSH reports ENOTEMPTY as a plain FAILURE.
        if ((err as { code?: unknown }).code === Status.FAILURE) throw new FsError('ENOTEMPTY', `${path}: directory not empty`, { path, cause: err })
        throw err
      }
    })
  }

  async rename(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    return this.#with(ctx, from, async (s) => {
      const src = remotePath(s.root, from)
      const dst = remotePath(s.root, to)
      await call<Stats>((cb) => s.sftp.lstat(src, cb))
      const target = await statOrNull(s, dst, false)
      if (target && (!opts.overwrite || target.isDirectory())) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
      await this.#place(s, src, dst, to, target !== null)
    })
  }

  async setMtime(ctx: OpContext, path: string, mtimeMs: number): Promise<void> {
    return this.#with(ctx, path, (s) =>
      call((cb) => s.sftp.utimes(remotePath(s.root, path), Math.floor(Date.now() / 1000), Math.floor(mtimeMs / 1000), cb)),
    )
  }

  async setMode(ctx: OpContext, path: string, mode: number): Promise<void> {
    return this.#with(ctx, path, (s) => call((cb) => s.sftp.chmod(remotePath(s.root, path), mode & 0o7777, cb)))
  }

  async truncate(ctx: OpContext, path: string, size: number): Promise<void> {
    return this.#with(ctx, path, (s) => call((cb) => s.sftp.setstat(remotePath(s.root, path), { size }, cb)))
  }

  close(): Promise<void> {
    return this.#pool.close()
  }

  /** Pool figures, for tests and health output. */
  stats(): SessionPoolStats {
    return this.#pool.stats()
  }

  /**
   * Renames `src` onto `dst` (storage path `to`). `replace`: an existing file may be
   * replaced, atomically with posix-rename; without that extension, by unlink + rename
   * (a reader may then find no file for an instant). Otherwise a plain SFTP rename,
   * which OpenSSH refuses when the target exists: EEXIST.
   */
  async #place(s: SftpSession, src: string, dst: string, to: string, replace: boolean): Promise<void> {
    try {
      if (replace && s.posixRename) return await call((cb) => s.sftp.ext_openssh_rename(src, dst, cb))
      if (replace) await call((cb) => s.sftp.unlink(dst, cb)).catch(() => {})
      await call((cb) => s.sftp.rename(src, dst, cb))
    } catch (err) {
      const code = (err as { code?: unknown }).code
      if (code === Status.FAILURE && (await statOrNull(s, dst, false)) !== null) {
        throw new FsError('EEXIST', `${to}: already exists`, { path: to, cause: err })
      }
      if (code === Status.NO_SUCH_FILE) throw new FsError('ENOENT', `${to}: the parent folder does not exist`, { path: to, cause: err })
      throw err
    }
  }

  /** A live session: one the pool hands out but whose connection died while idle is discarded, and another taken. */
  /** Runs `fn` with a session; errors come out classified, and tell the pool whether the session is still good. */
  async #with<T>(ctx: OpContext, path: string, fn: (s: SftpSession) => Promise<T>): Promise<T> {
    if (ctx.signal.aborted) throw cancelled(path)
    const out = await this.#pool.use(fn, ctx.signal, (err) => classify(err, path))
    this.#orphans.afterSuccess()
    return out
  }

  async #closeHandle(s: SftpSession, handle: Buffer): Promise<void> {
    if (s.broken) return
    await call((cb) => s.sftp.close(handle, cb)).catch(() => {})
  }

  /** A readdir batch → entries: `.`/`..` and temporary files left out, symlinks followed (dangling ones left out). */
  async #entries(s: SftpSession, dir: string, batch: readonly FileEntryWithStats[]): Promise<Entry[]> {
    const out = await Promise.all(
      batch.map(async (f): Promise<Entry | null> => {
        if (f.filename === '.' || f.filename === '..' || isTempUploadName(f.filename)) return null
        const path = dir === '/' ? `/${f.filename}` : `${dir}/${f.filename}`
        if (!f.attrs.isSymbolicLink()) return toEntry(path, f.attrs)
        const st = await statOrNull(s, remotePath(s.root, path))
        return st === null ? null : toEntry(path, st, true)
      }),
    )
    return out.filter((e): e is Entry => e !== null)
  }
}

/** Deletes a remote file; one that is not there is fine. @throws FsError (classified) */
async function unlinkIfThere(s: SftpSession, abs: string): Promise<void> {
  try {
    await call((cb) => s.sftp.unlink(abs, cb))
  } catch (err) {
    if ((err as { code?: unknown }).code !== Status.NO_SUCH_FILE) throw classify(err)
  }
}

// 5) Factory -----------------------------------------------------------------

/**
 * Opens the first session (so a wrong password or host key fails here) and learns
 * what the server offers; the session stays in the pool for the next operation.
 */
export async function createSftpDriver(cfg: SftpConfig): Promise<Driver> {
  const mod = (await import('ssh2')) as Ssh2 & { default?: Ssh2 }
  const ssh2 = mod.default ?? mod
  const timeoutMs = cfg.timeoutMs ?? 20_000
  const pool = new SessionPool<SftpSession>({
    isBroken: (s) => s.broken,
    open: (signal) => openSession(ssh2, cfg, timeoutMs, signal),
    close: closeSession,
    probe,
    max: cfg.maxSessions ?? 4,
    idleMs: cfg.idleMs ?? 60_000,
    acquireTimeoutMs: timeoutMs,
  })
  let posixRename: boolean
  try {
    posixRename = await pool.use(async (s) => s.posixRename)
  } catch (err) {
    await pool.close()
    throw classify(err)
  }
  return new SftpDriver(pool, { emptyDirs: true, atomicRename: posixRename, rangeRead: true, mtimePrecisionMs: 1000, refusedNameChars: '' })
}
