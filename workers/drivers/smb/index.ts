/**
 * @module workers/drivers/smb
 * A folder of an SMB share (Samba, Windows), over SMB 2.0.2/2.1 with NTLMv2: the
 * message encoder and NTLMv2 of `@tryjsky/v9u-smb2`, with this driver's own
 * transport and operations (session.ts says why).
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify (errors.ts),
 * 3) sessions (session.ts, pooled here), 4) the driver, 5) factory.
 *
 * Sessions: one TCP connection, login and tree connect each, from the one
 * SessionPool (workers/sessions.ts). An operation holds its session exclusively; a
 * session whose connection failed kills itself (session.ts), its probe then fails
 * and the pool replaces it. Idle sessions are closed after `idleMs`.
 *
 * Speed: SMB is request/response, so reads keep READ_AHEAD_BYTES of requests in
 * flight and yield them in order, in owned 1 MiB chunks; writes keep
 * WRITE_AHEAD_BYTES in flight. With SMB 2.1 and the server's large MTU (Samba,
 * Windows), a request carries up to 4 MiB, paid with one credit per 64 KiB
 * (session.ts); otherwise 64 KiB.
 *
 * Atomic writes: bytes go to a hidden temporary file in the target's folder
 * (`.filegate-<id>.part`, never listed); when complete, the open handle is renamed
 * onto the target (replacing it, or refusing when it exists for overwrite=false:
 * atomic either way) and closed. A failed write deletes its temporary file; when the
 * connection is gone and it cannot, the name is kept and deleted after the next
 * request that succeeds (workers/drivers/upload-cleanup.ts). DELETE_ON_CLOSE would
 * let the server do it, but Samba keeps that flag through a rename and cannot clear
 * it, so the finished file would vanish.
 */
import type { SmbSpec } from '../../../core/backend.js'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../../../core/driver.js'
import { FsError } from '../../../core/errors.js'
import { baseName, checkStorable, joinPath, parentOf } from '../../../core/paths.js'
import { type PoolKnobs, SessionPool, type SessionPoolStats } from '../../sessions.js'
import { SmbTransportError, classify } from './errors.js'
import { ACCESS, DISPOSITION, OPTIONS, type OpenFile, SmbSession } from './session.js'
import { isTempUploadName, tempUploadName } from '../upload-names.js'
import { UploadCleanup } from '../upload-cleanup.js'
import { InFlight, ReadAhead } from '../../inflight.js'
import { rechunk } from '../../rechunk.js'

export { classify } from './errors.js'

// 1) Config ------------------------------------------------------------------

/** The spec's parameters (core/backend.ts documents them) and the pool's knobs. */
export interface SmbConfig extends Omit<SmbSpec, 'type'>, PoolKnobs {}

/**
 * Bytes of READ requests in flight per transfer: 4 of 4 MiB with the large MTU, else
 * MAX_AHEAD of 64 KiB. Against Samba on loopback, 8 MiB in 1 MiB requests read at about
 * 0.6x smbclient, 16 MiB in 4 MiB requests on par with it (bench/README.md).
 */
const READ_AHEAD_BYTES = 16 * 1024 * 1024
/** Bytes of WRITE requests in flight per transfer. */
const WRITE_AHEAD_BYTES = 8 * 1024 * 1024
/** Requests in flight per transfer, at most (64 KiB ones, without the large MTU). */
const MAX_AHEAD = 64
/** Bytes per chunk handed to the consumer. */
const READ_CHUNK = 1024 * 1024

// 3) Sessions (the pool; the session itself is session.ts) ---------------------

function openPool(cfg: SmbConfig): SessionPool<SmbSession> {
  const timeoutMs = cfg.timeoutMs ?? 20_000
  const login = { hostname: cfg.hostname, port: cfg.port, share: cfg.share, domain: cfg.domain, username: cfg.username, password: cfg.password, timeoutMs }
  return new SessionPool<SmbSession>({
    // A connection the server dropped while the session was idle is not handed out again.
    isBroken: (s) => s.dead !== null,
    open: async (signal) => {
      try {
        return await SmbSession.open(login, signal)
      } catch (err) {
        throw classify(err, '/')
      }
    },
    close: async (s) => s.kill(new SmbTransportError('EUNAVAILABLE', 'the session was closed')),
    probe: async (s) => {
      if (s.dead) throw s.dead
      const f = await s.create('', { access: ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
      await s.close(f.fileId)
    },
    max: cfg.maxSessions ?? 4,
    idleMs: cfg.idleMs ?? 60_000,
    acquireTimeoutMs: timeoutMs,
  })
}

// 4) The driver --------------------------------------------------------------

/**
 * SMB names cannot hold `\ : * ? " < > |`: the backslash is SMB's separator (a name
 * holding one would reach another file), `:` names a stream, and Samba refuses the
 * others with STATUS_OBJECT_NAME_INVALID, as Windows does.
 */
const FEATURES: Features = { emptyDirs: true, atomicRename: true, rangeRead: true, mtimePrecisionMs: 1, refusedNameChars: '\\:*?"<>|' }

const canceled = (path: string) => new FsError('ECANCELED', 'cancelled', { path })
const toEntry = (path: string, f: { isDir: boolean; size: number; mtimeMs: number | null }): Entry => ({
  path,
  name: baseName(path),
  kind: f.isDir ? 'dir' : 'file',
  size: f.isDir ? 0 : f.size,
  mtimeMs: f.mtimeMs,
})

class SmbDriver implements Driver {
  readonly kind = 'smb'
  readonly features = FEATURES
  readonly #pool: SessionPool<SmbSession>
  /** Share-relative folder served as `/`, with `\` separators ('' = the share's root). */
  readonly #root: string
  /** Temporary files (SMB paths) that failed writes could not delete: the connection was gone. */
  readonly #orphans = new UploadCleanup<string>({
    run: async (temp) => {
      const s = await this.#pool.acquire()
      let err: unknown
      try {
        const f = await s.create(temp, { access: ACCESS.DELETE | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: OPTIONS.NON_DIRECTORY })
        await s.deleteOnClose(f.fileId)
        await s.close(f.fileId)
      } catch (e) {
        err = classify(e, '/')
        if ((err as FsError).code !== 'ENOENT') throw err // gone already: done
      } finally {
        void this.#pool.release(s, err)
      }
    },
  })

  constructor(cfg: SmbConfig) {
    this.#pool = openPool(cfg)
    this.#root = cfg.root.split('/').filter((s) => s !== '').join('\\')
  }

  /** Pool figures, for tests and health. */
  stats(): SessionPoolStats {
    return this.#pool.stats()
  }

  async stat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#use(ctx, path, async (s) => {
      const f = await s.create(this.#smb(path), { access: ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
      await s.close(f.fileId)
      return toEntry(path, f)
    })
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const s = await this.#acquire(ctx, dir)
    let failure: unknown
    let f: OpenFile | null = null
    try {
      f = await s.create(this.#smb(dir), { access: ACCESS.READ_DATA | ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: OPTIONS.DIRECTORY })
      for (;;) {
        if (ctx.signal.aborted) throw canceled(dir)
        const page = await s.queryDirectory(f.fileId)
        if (page === null) break
        const entries = page.filter((e) => !isTempUploadName(e.name)).map((e) => toEntry(joinPath(dir, e.name), e))
        if (entries.length > 0) yield entries
      }
    } catch (err) {
      failure = classify(err, dir)
      throw failure
    } finally {
      await this.#finish(s, f, failure)
    }
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const s = await this.#acquire(ctx, path)
    let failure: unknown
    let f: OpenFile | null = null
    try {
      f = await s.create(this.#smb(path), { access: ACCESS.READ_DATA | ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: OPTIONS.NON_DIRECTORY })
      const start = range?.start ?? 0
      const end = Math.min(range?.end ?? Infinity, f.size - 1) + 1 // exclusive
      yield* readPipelined(ctx, s, f.fileId, start, end, path)
    } catch (err) {
      failure = ctx.signal.aborted ? canceled(path) : classify(err, path)
      throw failure
    } finally {
      await this.#finish(s, f, failure)
    }
  }

  async write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<Entry> {
    if (path === '/') throw new FsError('EISDIR', '/: is a directory', { path })
    const target = this.#smb(path)
    const temp = this.#smb(joinPath(parentOf(path), tempUploadName(ctx, path)))
    const replace = opts.overwrite !== false
    return this.#use(ctx, path, async (s) => {
      const f = await s.create(temp, {
        access: ACCESS.WRITE_DATA | ACCESS.READ_ATTRIBUTES | ACCESS.WRITE_ATTRIBUTES | ACCESS.DELETE | ACCESS.SYNCHRONIZE,
        disposition: DISPOSITION.CREATE,
        options: OPTIONS.NON_DIRECTORY,
      })
      let size: number
      try {
        size = await writePipelined(ctx, s, f.fileId, body, path)
        if (ctx.signal.aborted) throw canceled(path)
        if (opts.mtimeMs !== undefined) await s.setMtime(f.fileId, opts.mtimeMs)
        try {
          await s.rename(f.fileId, target, replace)
        } catch (err) {
          throw await this.#renameFailure(s, err, target, path)
        }
      } catch (err) {
        try {
          await s.deleteOnClose(f.fileId)
          await s.close(f.fileId)
        } catch {
          this.#orphans.later(temp) // the connection is gone: delete it once the server answers again
        }
        throw err
      }
      await s.close(f.fileId)
      // The file as stored (the server sets its times; a `stat` must find the same ones): the
      // S3 gateway keys its ETag records by them.
      const written = await s.create(target, { access: ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 }).catch(() => null)
      if (written === null) return { path, name: baseName(path), kind: 'file', size, mtimeMs: opts.mtimeMs ?? Date.now() } satisfies Entry
      await s.close(written.fileId)
      return toEntry(path, written)
    })
  }

  async mkdir(ctx: OpContext, dir: string): Promise<void> {
    if (dir === '/') return
    return this.#use(ctx, dir, async (s) => {
      let f: OpenFile
      try {
        f = await s.create(this.#smb(dir), { access: ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.CREATE, options: OPTIONS.DIRECTORY })
      } catch (err) {
        const e = classify(err, dir)
        if (e.code !== 'EEXIST') throw e
        const existing = await s.create(this.#smb(dir), { access: ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
        await s.close(existing.fileId)
        if (existing.isDir) return
        throw e
      }
      await s.close(f.fileId)
    })
  }

  async remove(ctx: OpContext, path: string): Promise<void> {
    if (path === '/') throw new FsError('EACCES', 'the root cannot be removed', { path })
    return this.#use(ctx, path, async (s) => {
      const f = await s.create(this.#smb(path), { access: ACCESS.DELETE | ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
      try {
        await s.deleteOnClose(f.fileId)
      } finally {
        if (!s.dead) await s.close(f.fileId)
      }
    })
  }

  async rename(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    if (from === '/') throw new FsError('EACCES', 'the root cannot be renamed', { path: from })
    return this.#use(ctx, from, async (s) => {
      const f = await s.create(this.#smb(from), { access: ACCESS.DELETE | ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
      try {
        await s.rename(f.fileId, this.#smb(to), opts.overwrite && !f.isDir)
      } catch (err) {
        throw await this.#renameFailure(s, err, this.#smb(to), to)
      } finally {
        if (!s.dead) await s.close(f.fileId)
      }
    })
  }

  async setMtime(ctx: OpContext, path: string, mtimeMs: number): Promise<void> {
    return this.#use(ctx, path, async (s) => {
      const f = await s.create(this.#smb(path), { access: ACCESS.WRITE_ATTRIBUTES | ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
      try {
        await s.setMtime(f.fileId, mtimeMs)
      } finally {
        if (!s.dead) await s.close(f.fileId)
      }
    })
  }

  async close(): Promise<void> {
    await this.#pool.close()
  }

  // Internals ----------------------------------------------------------------

  /** A canonical path → share-relative SMB path. A name SMB cannot hold is EINVAL (never a backslash read as a separator). */
  #smb(path: string): string {
    checkStorable(FEATURES, path)
    const rel = path === '/' ? '' : path.slice(1).replace(/\//g, '\\')
    return this.#root === '' ? rel : rel === '' ? this.#root : `${this.#root}\\${rel}`
  }

  async #acquire(ctx: OpContext, path: string): Promise<SmbSession> {
    try {
      return await this.#pool.acquire(ctx.signal)
    } catch (err) {
      throw classify(err, path)
    }
  }

  /** Runs `fn` on a pooled session; errors are classified, and the pool judges the session by them. */
  async #use<T>(ctx: OpContext, path: string, fn: (s: SmbSession) => Promise<T>): Promise<T> {
    const s = await this.#acquire(ctx, path)
    let result: T
    try {
      result = await fn(s)
    } catch (err) {
      const e = ctx.signal.aborted ? canceled(path) : classify(err, path)
      void this.#pool.release(s, e)
      throw e
    }
    void this.#pool.release(s)
    this.#orphans.afterSuccess()
    return result
  }

  /** Closes a stream's handle (when the session still works) and gives the session back. */
  async #finish(s: SmbSession, f: OpenFile | null, failure: unknown): Promise<void> {
    let err = failure
    if (f !== null && !s.dead) {
      try {
        await s.close(f.fileId)
      } catch (e) {
        err ??= classify(e, '/')
      }
    }
    // A read stopped early (return()) left requests in flight: their replies still come,
    // on a session that works, so it goes back as healthy.
    void this.#pool.release(s, err)
  }

  /** Why a rename onto `target` failed: EISDIR / EEXIST when something is there, else the error itself. */
  async #renameFailure(s: SmbSession, err: unknown, target: string, path: string): Promise<FsError> {
    const e = classify(err, path)
    if (s.dead || (e.code !== 'EEXIST' && e.code !== 'EACCES')) return e
    try {
      const t = await s.create(target, { access: ACCESS.READ_ATTRIBUTES | ACCESS.SYNCHRONIZE, disposition: DISPOSITION.OPEN, options: 0 })
      await s.close(t.fileId)
      if (t.isDir) return new FsError('EISDIR', `${path}: is a directory`, { path })
      return new FsError('EEXIST', `${path}: already exists`, { path })
    } catch {
      return e
    }
  }
}

/**
 * Reads [start, end) with READ_AHEAD requests in flight, in order. Replies are views
 * into the socket's buffers: they are copied into owned 1 MiB chunks, which the
 * consumer may transfer to another thread.
 */
function readPipelined(ctx: OpContext, s: SmbSession, fileId: Buffer, start: number, end: number, path: string): AsyncIterable<Uint8Array> {
  async function* replies(): AsyncGenerator<Buffer> {
    const ahead = new ReadAhead<Buffer>()
    const lens: number[] = []
    let next = start
    const readAhead = Math.min(MAX_AHEAD, Math.max(2, Math.floor(READ_AHEAD_BYTES / s.readLen)))
    const issue = (): void => {
      while (ahead.length < readAhead && next < end) {
        const len = Math.min(s.readLen, end - next)
        ahead.push(s.read(fileId, next, len))
        lens.push(len)
        next += len
      }
    }
    issue()
    for (let p = ahead.shift(); p !== undefined; p = ahead.shift()) {
      const data = await p
      if (ctx.signal.aborted) throw canceled(path)
      issue()
      yield data
      if (data.length < lens.shift()!) return // the file ended earlier than its size said (it shrank)
    }
  }
  return rechunk(replies(), READ_CHUNK, { owned: true })
}

/** Writes `body` from offset 0 in blocks of the session's write size, WRITE_AHEAD_BYTES in flight; resolves with the byte count. */
async function writePipelined(ctx: OpContext, s: SmbSession, fileId: Buffer, body: AsyncIterable<Uint8Array>, path: string): Promise<number> {
  const flight = new InFlight()
  const writeAhead = Math.min(MAX_AHEAD, Math.max(2, Math.floor(WRITE_AHEAD_BYTES / s.writeLen)))
  let offset = 0
  try {
    for await (const block of rechunk(body, s.writeLen, { owned: false })) {
      if (ctx.signal.aborted) throw canceled(path)
      await flight.below(writeAhead)
      const at = offset
      offset += block.length
      flight.add(
        s.write(fileId, at, block).then((written) => {
          if (written !== block.length) throw new FsError('EIO', `${path}: the SMB server wrote ${written} of ${block.length} bytes`, { path })
        }),
      )
    }
    await flight.all()
    return offset
  } catch (err) {
    await flight.settled()
    throw err
  }
}

// 5) Factory -----------------------------------------------------------------

export async function createSmbDriver(cfg: SmbConfig): Promise<Driver> {
  return new SmbDriver(cfg)
}

