/**
 * @module workers/drivers/ftp
 * A folder on an FTP server (`basic-ftp`): passive mode, FTPS (explicit AUTH TLS)
 * when `secure` is set.
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify (errors.ts),
 * 3) sessions (session.ts), 4) the driver, 5) factory.
 *
 * Sessions: one control connection each, from the one SessionPool
 * (workers/sessions.ts); an operation holds its session exclusively, and a transfer
 * opens its own data connection. A transfer that stops before the server's end (a
 * bounded range, a consumer that gives up, a failed upload) leaves the control
 * connection mid-reply, so that session is closed rather than reused.
 *
 * What FTP lacks and how it is covered:
 * - stat: no standard command. A file answers SIZE (and MDTM for its time); a folder
 *   answers CWD. PWD after CWD gives the folder's physical path: a folder reached
 *   through a symlink is marked `link`, so recursive walks never descend into it.
 * - listings: MLSD when the server has it, else `LIST -a` (vsftpd), parsed by
 *   basic-ftp. LIST times are minute- or day-granular and their time zone is the
 *   server's choice, so without MLSD + MFMT mtimes are reported as hints
 *   (`mtimePrecisionMs: null`) and cannot be set.
 * - atomic upload: bytes go to a hidden `.filegate-<id>.part` in the target's folder,
 *   then RNFR/RNTO onto the target. Servers that rename with rename(2) (vsftpd,
 *   ProFTPD, Pure-FTPd) replace atomically; "never replace" (overwrite false) is a
 *   check just before the rename, so a file created by someone else in that instant
 *   would be replaced.
 */
import { Readable } from 'node:stream'
import type { ConnectionOptions } from 'node:tls'
import type { FileInfo } from 'basic-ftp'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../../../core/driver.js'
import { FsError } from '../../../core/errors.js'
import { baseName, parentOf } from '../../../core/paths.js'
import type { FtpSpec } from '../../../core/backend.js'
import { type PoolKnobs, SessionPool, type SessionPoolStats } from '../../sessions.js'
import { classify, ftpCode } from './errors.js'
import { type BasicFtp, type FtpSession, DownloadSink, closeSession, isBroken, mfmtStamp, openSession, parseListDate, parseMdtm, probe, pwd } from './session.js'
import { isTempUploadName, tempUploadName } from '../upload-names.js'
import { UploadCleanup } from '../upload-cleanup.js'
import { remoteParent, remotePath } from '../remote-path.js'

export { classify } from './errors.js'
export { parseListDate } from './session.js'

// 1) Config ------------------------------------------------------------------

/** The spec's parameters (core/backend.ts documents them) and the pool's knobs. */
export interface FtpConfig extends Omit<FtpSpec, 'type'>, PoolKnobs {
  /** TLS options for FTPS (e.g. `ca` for a private certificate authority). */
  readonly tls?: ConnectionOptions
}

/** Most bytes a read yields at once (what has arrived is coalesced up to this). */
const READ_CHUNK = 1024 * 1024
/** Bytes an upload buffers ahead of the data connection. */
const WRITE_BUFFER = 1024 * 1024
const LIST_PAGE = 512

// 2) classify: errors.ts. 3) Sessions: session.ts.

// 4) The driver --------------------------------------------------------------

const cancelled = (path: string): FsError => new FsError('ECANCELED', 'cancelled', { path })
const lost = (): FsError => new FsError('EUNAVAILABLE', 'the FTP connection was lost')

/** What a stat learns; `link` only for folders (see the module comment). */
interface Probe {
  readonly kind: 'file' | 'dir'
  readonly size: number
  readonly mtimeMs: number | null
  readonly link: boolean
}

class FtpDriver implements Driver {
  readonly kind = 'ftp'
  readonly features: Features
  readonly setMtime?: (ctx: OpContext, path: string, mtimeMs: number) => Promise<void>
  readonly #pool: SessionPool<FtpSession>
  /**
   * Temporary files of failed uploads, deleted through the pool (the failed session
   * may be gone); kept for after the next success when the server cannot be reached.
   */
  readonly #orphans: UploadCleanup<string>

  constructor(pool: SessionPool<FtpSession>, features: Features, mfmt: boolean) {
    this.#pool = pool
    this.features = features
    this.#orphans = new UploadCleanup<string>({
      run: (tmp) =>
        this.#pool.use(
          async (x) => {
            if (isBroken(x)) throw lost()
            await x.client.send(`DELE ${tmp}`).catch((err: unknown) => {
              if (ftpCode(err) !== 550) throw err // 550: not there (never created, or gone)
            })
          },
          undefined,
          (err) => classify(err),
        ),
    })
    // Only a server with MFMT can set times (vsftpd has none): no method otherwise.
    if (mfmt) {
      this.setMtime = (ctx, path, mtimeMs) =>
        this.#with(ctx, path, async (s) => {
          if ((await this.#probe(s, path)) === null) throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
          await s.client.send(`MFMT ${mfmtStamp(mtimeMs)} ${remotePath(s.root, path)}`)
        })
    }
  }

  async stat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#with(ctx, path, async (s) => {
      const p = await this.#probe(s, path)
      if (p === null) throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
      return toEntry(path, p)
    })
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const s = await this.#pool.acquire(ctx.signal)
    let failure: FsError | undefined
    try {
      const abs = remotePath(s.root, dir)
      try {
        await s.client.send(`CWD ${abs}`)
      } catch (err) {
        if (ftpCode(err) !== 550) throw err
        if ((await this.#probe(s, dir)) !== null) throw new FsError('ENOTDIR', `${dir}: not a directory`, { path: dir })
        throw new FsError('ENOENT', `${dir}: no such file or directory`, { path: dir })
      }
      // Relative to the working folder: no quoting issues, and vsftpd's LIST would
      // read wildcards in a path argument.
      const infos = await s.client.list()
      const now = Date.now()
      for (let i = 0; i < infos.length; i += LIST_PAGE) {
        if (ctx.signal.aborted) throw cancelled(dir)
        const page = await this.#entries(s, dir, infos.slice(i, i + LIST_PAGE), now)
        if (page.length > 0) yield page
      }
    } catch (err) {
      failure = classify(err, dir)
      throw failure
    } finally {
      void this.#pool.release(s, failure)
    }
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const s = await this.#pool.acquire(ctx.signal)
    let failure: FsError | undefined
    let complete = false
    let started = false
    /** The server answered RETR with an error: the exchange is over, the session fine. */
    let refused = false
    try {
      const abs = remotePath(s.root, path)
      const start = range?.start ?? 0
      let want = Infinity
      if (range?.end !== undefined) {
        // A range that stops before the end of the file ends the transfer early, which
        // costs the session: learn the size first so that "to the end" is not such a range.
        const size = await s.client.size(abs).catch(() => Infinity)
        if (range.end < size - 1) want = range.end - start + 1
      }
      // Without REST the download starts at 0 and the bytes before the range are dropped.
      let skip = start > 0 && !s.rest ? start : 0
      const sink = new DownloadSink()
      started = true
      s.client.downloadTo(sink, abs, start - skip).then(
        () => sink.settle(null),
        (err: unknown) => sink.settle(err),
      )
      let got = 0
      while (got < want) {
        if (ctx.signal.aborted) throw cancelled(path)
        const chunk = await sink.take(Math.min(READ_CHUNK, skip > 0 ? skip : want - got))
        if (chunk === null) {
          complete = true
          break
        }
        if (skip > 0) {
          skip -= chunk.length
          continue
        }
        got += chunk.length
        yield chunk
      }
    } catch (err) {
      failure = classify(err, path)
      refused = typeof ftpCode(err) === 'number'
      if (ftpCode(err) === 550 && !isBroken(s)) {
        // RETR's 550 covers a folder and a missing file alike.
        const p = await this.#probe(s, path).catch(() => null)
        if (p?.kind === 'dir') failure = new FsError('EISDIR', `${path}: is a directory`, { path })
      }
      throw failure
    } finally {
      if (started && !complete && !refused) {
        // Stopped before the server's end: the control connection still owes a reply.
        s.broken = true
        s.client.close()
      }
      void this.#pool.release(s, failure ?? (s.broken ? lost() : undefined))
    }
  }

  async write(ctx: OpContext, path: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<Entry> {
    const s = await this.#pool.acquire(ctx.signal)
    const abs = remotePath(s.root, path)
    const tmp = `${remoteParent(abs)}/${tempUploadName(ctx, path)}`
    let failure: FsError | undefined
    let uploadStarted = false
    /** Between STOR and its final reply: a failure there leaves the control connection unusable. */
    let uploading = false
    let bodyError: unknown = null
    try {
      const existing = await this.#probe(s, path, false)
      if (existing?.kind === 'dir') throw new FsError('EISDIR', `${path}: is a directory`, { path })
      if (existing && opts.overwrite === false) throw new FsError('EEXIST', `${path}: already exists`, { path })
      // The body, stopped by an abort; its own failure is remembered, since basic-ftp
      // reports it as a closed connection.
      async function* guarded(): AsyncIterable<Uint8Array> {
        try {
          for await (const chunk of body) {
            if (ctx.signal.aborted) throw cancelled(path)
            yield chunk
          }
          if (ctx.signal.aborted) throw cancelled(path)
        } catch (err) {
          bodyError = err
          throw err
        }
      }
      uploadStarted = true
      uploading = true
      try {
        await s.client.uploadFrom(Readable.from(guarded(), { objectMode: false, highWaterMark: WRITE_BUFFER }), tmp)
      } catch (err) {
        // An error reply (a number) ends the exchange cleanly; anything else cuts it.
        if (typeof ftpCode(err) === 'number' && bodyError === null) uploading = false
        if (bodyError !== null) throw bodyError
        if (ftpCode(err) === 553 || ftpCode(err) === 550) {
          // STOR refused: a missing parent folder, or no permission.
          const parent = await this.#probe(s, parentOf(path)).catch(() => null)
          if (parent === null) throw new FsError('ENOENT', `${path}: the parent folder does not exist`, { path, cause: err })
        }
        throw err
      }
      uploading = false
      if (opts.mtimeMs !== undefined && s.mfmt) await s.client.send(`MFMT ${mfmtStamp(opts.mtimeMs)} ${tmp}`)
      if (opts.overwrite === false && (await this.#probe(s, path, false)) !== null) throw new FsError('EEXIST', `${path}: already exists`, { path })
      await this.#rename(s, tmp, abs, path, opts.overwrite !== false)
      const p = await this.#probe(s, path)
      if (p === null) throw new FsError('EIO', `${path}: the upload vanished after its rename`, { path })
      return toEntry(path, p)
    } catch (err) {
      failure = classify(err, path)
      if (uploading) s.broken = true // the control connection is mid-transfer
      throw failure
    } finally {
      void this.#pool.release(s, failure === undefined ? undefined : s.broken ? lost() : failure)
      if (failure !== undefined && uploadStarted) await this.#orphans.now(tmp)
    }
  }

  async mkdir(ctx: OpContext, dir: string): Promise<void> {
    return this.#with(ctx, dir, async (s) => {
      try {
        await s.client.send(`MKD ${remotePath(s.root, dir)}`)
      } catch (err) {
        if (ftpCode(err) !== 550) throw err
        const p = await this.#probe(s, dir)
        if (p?.kind === 'dir') return
        if (p !== null) throw new FsError('EEXIST', `${dir}: already exists`, { path: dir })
        if ((await this.#probe(s, parentOf(dir))) === null) throw new FsError('ENOENT', `${dir}: the parent folder does not exist`, { path: dir })
        throw new FsError('EACCES', `${dir}: the FTP server refused to create it`, { path: dir, cause: err })
      }
    })
  }

  async remove(ctx: OpContext, path: string): Promise<void> {
    return this.#with(ctx, path, async (s) => {
      const abs = remotePath(s.root, path)
      const p = await this.#probe(s, path)
      if (p === null) throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
      if (p.kind === 'file') return void (await s.client.send(`DELE ${abs}`))
      try {
        await s.client.send(`RMD ${abs}`)
      } catch (err) {
        if (ftpCode(err) !== 550) throw err
        // A symlink to a folder: DELE removes the link itself.
        if (await s.client.send(`DELE ${abs}`).then(() => true, () => false)) return
        throw new FsError('ENOTEMPTY', `${path}: directory not empty`, { path, cause: err })
      }
    })
  }

  async rename(ctx: OpContext, from: string, to: string, opts: { overwrite: boolean }): Promise<void> {
    return this.#with(ctx, from, async (s) => {
      if ((await this.#probe(s, from)) === null) throw new FsError('ENOENT', `${from}: no such file or directory`, { path: from })
      const target = await this.#probe(s, to)
      if (target && (!opts.overwrite || target.kind === 'dir')) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
      await this.#rename(s, remotePath(s.root, from), remotePath(s.root, to), to, target !== null)
    })
  }

  close(): Promise<void> {
    return this.#pool.close()
  }

  /** Pool figures, for tests and health output. */
  stats(): SessionPoolStats {
    return this.#pool.stats()
  }

  /**
   * RNFR/RNTO. Most servers replace an existing target (rename(2)); for those that
   * refuse, `replace` deletes the target and renames again.
   */
  async #rename(s: FtpSession, src: string, dst: string, to: string, replace: boolean): Promise<void> {
    const once = async (): Promise<void> => {
      await s.client.send(`RNFR ${src}`)
      await s.client.send(`RNTO ${dst}`)
    }
    try {
      await once()
    } catch (err) {
      const code = ftpCode(err)
      if (code !== 550 && code !== 553) throw err
      if (replace) {
        await s.client.send(`DELE ${dst}`)
        return once()
      }
      if ((await this.#probe(s, parentOf(to))) === null) throw new FsError('ENOENT', `${to}: the parent folder does not exist`, { path: to, cause: err })
      throw err
    }
  }

  /**
   * What is at `path`: a file answers SIZE (and MDTM), a folder CWD; null when
   * neither. A folder whose physical path (PWD) is not where it would be without
   * symlinks was reached through one.
   */
  async #probe(s: FtpSession, path: string, withTime = true): Promise<Probe | null> {
    const abs = remotePath(s.root, path)
    if (path !== '/') {
      const size = await s.client.size(abs).then(
        (n) => n,
        (err: unknown) => {
          if (ftpCode(err) === 550) return null
          throw err
        },
      )
      if (size !== null) {
        const mtimeMs = s.mdtm && withTime ? await s.client.send(`MDTM ${abs}`).then((r) => parseMdtm(r.message), () => null) : null
        return { kind: 'file', size, mtimeMs, link: false }
      }
    }
    try {
      await s.client.send(`CWD ${abs}`)
    } catch (err) {
      if (ftpCode(err) === 550) return null
      throw err
    }
    const real = await pwd(s.client)
    const expected = path === '/' ? s.realRoot : s.realRoot === '/' ? path : s.realRoot + path
    return { kind: 'dir', size: 0, mtimeMs: null, link: real !== expected }
  }

  /** A live session: one whose connection died while idle is discarded, and another taken. */
  async #with<T>(ctx: OpContext, path: string, fn: (s: FtpSession) => Promise<T>): Promise<T> {
    if (ctx.signal.aborted) throw cancelled(path)
    const out = await this.#pool.use(fn, ctx.signal, (err) => classify(err, path))
    this.#orphans.afterSuccess()
    return out
  }

  /** A page of LIST/MLSD entries → Entries: `.`/`..` and temporary files out, symlinks resolved (dangling ones out). */
  async #entries(s: FtpSession, dir: string, infos: readonly FileInfo[], now: number): Promise<Entry[]> {
    const out: Entry[] = []
    for (const f of infos) {
      if (f.name === '.' || f.name === '..' || f.name === '' || f.name.includes('/') || isTempUploadName(f.name)) continue
      const path = dir === '/' ? `/${f.name}` : `${dir}/${f.name}`
      const mtimeMs = f.modifiedAt ? f.modifiedAt.getTime() : parseListDate(f.rawModifiedAt, now)
      if (f.isSymbolicLink) {
        // One at a time: a session is one control connection.
        const p = await this.#probe(s, path)
        if (p !== null) out.push({ ...toEntry(path, p), mtimeMs: p.mtimeMs ?? mtimeMs, link: true })
        continue
      }
      const isDir = f.isDirectory
      out.push({ path, name: f.name, kind: isDir ? 'dir' : 'file', size: isDir ? 0 : f.size, mtimeMs })
    }
    return out
  }
}

function toEntry(path: string, p: Probe): Entry {
  const e: Entry = { path, name: baseName(path), kind: p.kind, size: p.size, mtimeMs: p.mtimeMs }
  return p.link ? { ...e, link: true } : e
}

// 5) Factory -----------------------------------------------------------------

/**
 * Opens the first session (so wrong credentials fail here) and learns what the
 * server offers; the session stays in the pool for the next operation.
 */
export async function createFtpDriver(cfg: FtpConfig): Promise<Driver> {
  const mod = (await import('basic-ftp')) as BasicFtp & { default?: BasicFtp }
  const ftp = mod.default ?? mod
  const timeoutMs = cfg.timeoutMs ?? 20_000
  const pool = new SessionPool<FtpSession>({
    isBroken: isBroken,
    open: (signal) => openSession(ftp, cfg, timeoutMs, signal),
    close: closeSession,
    probe,
    max: cfg.maxSessions ?? 4,
    idleMs: cfg.idleMs ?? 60_000,
    acquireTimeoutMs: timeoutMs,
  })
  let caps: { mfmt: boolean; mlsd: boolean; rest: boolean }
  try {
    caps = await pool.use(async (s) => ({ mfmt: s.mfmt, mlsd: s.mlsd, rest: s.rest }))
  } catch (err) {
    await pool.close()
    throw classify(err)
  }
  // Exact times need both: MLSD to list them, MFMT to set them.
  const mtimes = caps.mfmt && caps.mlsd
  return new FtpDriver(pool, { emptyDirs: true, atomicRename: false, rangeRead: caps.rest, mtimePrecisionMs: mtimes ? 1000 : null, refusedNameChars: '' }, mtimes)
}
