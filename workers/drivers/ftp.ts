/**
 * @module workers/drivers/ftp
 * A folder on an FTP server (`basic-ftp`): passive mode, FTPS (explicit AUTH TLS)
 * when `secure` is set.
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify,
 * 3) sessions, 4) the driver, 5) factory.
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
import { randomBytes } from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import type { ConnectionOptions } from 'node:tls'
import type { Client, FileInfo } from 'basic-ftp'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../../core/driver.js'
import { FsError, isFsError } from '../../core/errors.js'
import { baseName } from '../../core/paths.js'
import { SessionPool, type SessionPoolStats } from '../sessions.js'

// 1) Config ------------------------------------------------------------------

export interface FtpConfig {
  readonly hostname: string
  readonly port: number
  readonly username: string
  readonly password: string
  /** Explicit FTPS (AUTH TLS) on the control and data connections. */
  readonly secure: boolean
  /** Remote folder served as `/`: absolute, relative to the login folder, or '' for the login folder. */
  readonly root: string
  /** TLS options for FTPS (e.g. `ca` for a private certificate authority). */
  readonly tls?: ConnectionOptions
  /** Sessions (control connections) per driver; default 4. */
  readonly maxSessions?: number
  /** An idle session is closed after this long; default 60 s. */
  readonly idleMs?: number
  /** Connecting and logging in, waiting for a session, and a silent server; default 20 s. */
  readonly timeoutMs?: number
}

/** Most bytes a read yields at once (what has arrived is coalesced up to this). */
const READ_CHUNK = 1024 * 1024
/** Bytes a download buffers before the data connection is paused. */
const READ_BUFFER = 2 * 1024 * 1024
/** Bytes an upload buffers ahead of the data connection. */
const WRITE_BUFFER = 1024 * 1024
const LIST_PAGE = 512
const TEMP_NAME = /^\.filegate-[A-Za-z0-9_-]+\.part$/

// 2) classify ----------------------------------------------------------------

/** Socket-level codes: the server is not there (any more). */
const UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED'])

/**
 * basic-ftp / socket error → FsError. FTP's 550 covers "missing", "not allowed" and
 * "not that kind of entry" alike: operations look first (stat) where the difference
 * matters, and classify's 550 is ENOENT. Messages name the storage path only.
 */
export function classify(err: unknown, path?: string): FsError {
  if (isFsError(err)) return err
  const e = (err ?? {}) as { code?: unknown; message?: unknown }
  const msg = typeof e.message === 'string' ? e.message : String(err)
  const at = path === undefined ? '' : `${path}: `
  const opts = { cause: err, ...(path === undefined ? {} : { path }) }
  if (typeof e.code === 'number') {
    const c = e.code
    if (c === 530) return new FsError('EAUTH', 'the FTP server refused the credentials', opts)
    if (c === 550) return new FsError('ENOENT', `${at}no such file or directory`, opts)
    if (c === 553) return new FsError('EACCES', `${at}the FTP server refused the name`, opts)
    if (c === 552 || c === 452) return new FsError('EFBIG', `${at}the FTP server has no room for it`, opts)
    if (c === 421 || c === 425 || c === 426) return new FsError('EUNAVAILABLE', 'the FTP connection was lost', opts)
    if (c === 500 || c === 502 || c === 504) return new FsError('ENOTSUP', `${at}the FTP server does not support this operation`, opts)
    if (c === 501) return new FsError('EINVAL', `${at}the FTP server refused the request`, opts)
    return new FsError('EIO', `${at}the FTP server reported a failure (${c})`, opts)
  }
  if (typeof e.code === 'string' && UNAVAILABLE.has(e.code)) return new FsError('EUNAVAILABLE', `the FTP server cannot be reached (${e.code})`, opts)
  if (e.code === 'ETIMEDOUT' || /^Timeout/.test(msg)) return new FsError('ETIMEDOUT', 'the FTP server did not answer in time', opts)
  if (typeof e.code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(e.code)) {
    return new FsError('EUNAVAILABLE', `the FTP server's TLS certificate is not trusted (${e.code})`, { ...opts, retryable: false })
  }
  if (/closed|FIN packet|transmission error|transfer strategies|no data connection/i.test(msg)) {
    return new FsError('EUNAVAILABLE', 'the FTP connection was lost', opts)
  }
  return new FsError('EIO', `${at}storage error`, opts)
}

const ftpCode = (err: unknown): unknown => (err as { code?: unknown })?.code

// 3) Sessions ----------------------------------------------------------------

interface FtpSession {
  readonly client: Client
  /** Remote folder served as `/`, as the client names it. */
  readonly root: string
  /** Its physical path (PWD after CWD): what a folder without symlinks on the way reports. */
  readonly realRoot: string
  readonly mdtm: boolean
  readonly mfmt: boolean
  readonly mlsd: boolean
  readonly rest: boolean
  /** Set when the control connection is mid-reply or gone: never reused. */
  broken: boolean
}

type BasicFtp = typeof import('basic-ftp')

const isBroken = (s: FtpSession): boolean => s.broken || s.client.closed

/** PWD's answer, `257 "<path>" ...` with `"` doubled inside (RFC 959). */
async function pwd(client: Client): Promise<string> {
  const res = await client.send('PWD')
  const m = /^257 "((?:[^"]|"")*)"/.exec(res.message)
  if (!m) throw new FsError('EIO', 'the FTP server gave an unreadable PWD answer')
  return m[1]!.replace(/""/g, '"')
}

async function openSession(ftp: BasicFtp, cfg: FtpConfig, timeoutMs: number, signal: AbortSignal): Promise<FtpSession> {
  const client = new ftp.Client(timeoutMs)
  const onAbort = (): void => client.close()
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    await client.access({
      host: cfg.hostname,
      port: cfg.port,
      user: cfg.username,
      password: cfg.password,
      secure: cfg.secure,
      ...(cfg.secure ? { secureOptions: { ...cfg.tls } } : {}),
    })
    const feats = await client.features()
    const home = await pwd(client)
    const root = cfg.root === '' ? home : cfg.root.startsWith('/') ? cfg.root : `${home === '/' ? '' : home}/${cfg.root}`
    try {
      await client.send(`CWD ${root}`)
    } catch (err) {
      if (ftpCode(err) === 550) throw new FsError('ENOENT', 'the storage root folder does not exist on the FTP server', { cause: err })
      throw err
    }
    const realRoot = await pwd(client)
    return {
      client,
      root: root.length > 1 ? root.replace(/\/+$/, '') : root,
      realRoot,
      mdtm: feats.has('MDTM'),
      mfmt: feats.has('MFMT'),
      mlsd: feats.has('MLST'),
      rest: feats.has('REST'),
      broken: false,
    }
  } catch (err) {
    client.close()
    throw signal.aborted ? (signal.reason ?? err) : classify(err)
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

function closeSession(s: FtpSession): Promise<void> {
  s.broken = true
  s.client.close() // destroys the sockets: never waits for a dead peer
  return Promise.resolve()
}

async function probe(s: FtpSession): Promise<void> {
  if (isBroken(s)) throw new Error('connection closed')
  await s.client.send('NOOP')
}

// 4) The driver --------------------------------------------------------------

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']

/**
 * A LIST date (`Nov 22 18:02` or `Apr 18 2025`, as basic-ftp joins it) → ms, read
 * as UTC (vsftpd's default). A date without a year is in the last twelve months.
 */
export function parseListDate(raw: string, now = Date.now()): number | null {
  const m = /^([A-Za-z]{3})\s+(\d{1,2})\s+(?:(\d{1,2}):(\d{2})|(\d{4}))$/.exec(raw.trim())
  if (!m) return null
  const month = MONTHS.indexOf(m[1]!.toLowerCase())
  if (month < 0) return null
  const day = Number(m[2])
  if (m[5] !== undefined) return Date.UTC(Number(m[5]), month, day)
  const year = new Date(now).getUTCFullYear()
  const t = Date.UTC(year, month, day, Number(m[3]), Number(m[4]))
  return t > now + 86_400_000 ? Date.UTC(year - 1, month, day, Number(m[3]), Number(m[4])) : t
}

/** MDTM's `213 YYYYMMDDhhmmss[.sss]` → ms. */
function parseMdtm(message: string): number | null {
  const m = /(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.(\d{1,3}))?/.exec(message.slice(4))
  if (!m) return null
  const [, y, mo, d, h, mi, se, ms] = m
  return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se), ms === undefined ? 0 : Number(ms.padEnd(3, '0')))
}

function mfmtStamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)
}

const cancelled = (path: string): FsError => new FsError('ECANCELED', 'cancelled', { path })
const lost = (): FsError => new FsError('EUNAVAILABLE', 'the FTP connection was lost')

/**
 * The download side of a transfer: a Writable that basic-ftp pipes the data
 * connection into, and that the read generator pulls from. It holds at most
 * READ_BUFFER bytes (then the data connection pauses), and reports the end only when
 * the transfer itself has completed, never merely because the stream was ended
 * (basic-ftp ends it on failures too).
 */
class DownloadSink extends Writable {
  #queue: Buffer[] = []
  #bytes = 0
  #held: (() => void) | null = null
  #wake: (() => void) | null = null
  #done = false
  #error: unknown = null

  constructor() {
    super({ highWaterMark: READ_BUFFER })
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#queue.push(chunk)
    this.#bytes += chunk.length
    if (this.#bytes < READ_BUFFER) cb()
    else this.#held = () => cb()
    this.#notify()
  }

  /** The transfer completed (true) or failed. */
  settle(error: unknown): void {
    if (error === null) this.#done = true
    else this.#error ??= error
    this.#notify()
  }

  /** Up to `max` bytes in a fresh buffer; null at the end. @throws the transfer's error */
  async take(max: number): Promise<Buffer | null> {
    while (this.#bytes === 0) {
      if (this.#error !== null) throw this.#error
      if (this.#done) return null
      await new Promise<void>((resolve) => (this.#wake = resolve))
    }
    const out = Buffer.allocUnsafeSlow(Math.min(max, this.#bytes))
    let off = 0
    while (off < out.length) {
      const head = this.#queue[0]!
      const n = Math.min(head.length, out.length - off)
      head.copy(out, off, 0, n)
      off += n
      if (n === head.length) this.#queue.shift()
      else this.#queue[0] = head.subarray(n)
    }
    this.#bytes -= out.length
    if (this.#held !== null && this.#bytes < READ_BUFFER) {
      const release = this.#held
      this.#held = null
      release()
    }
    return out
  }

  #notify(): void {
    const w = this.#wake
    this.#wake = null
    w?.()
  }
}

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

  constructor(pool: SessionPool<FtpSession>, features: Features, mfmt: boolean) {
    this.#pool = pool
    this.features = features
    // Only a server with MFMT can set times (vsftpd has none): no method otherwise.
    if (mfmt) {
      this.setMtime = (ctx, path, mtimeMs) =>
        this.#with(ctx, path, async (s) => {
          if ((await this.#probe(s, path)) === null) throw new FsError('ENOENT', `${path}: no such file or directory`, { path })
          await s.client.send(`MFMT ${mfmtStamp(mtimeMs)} ${absPath(s, path)}`)
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
    const s = await this.#acquire(ctx)
    let failure: FsError | undefined
    try {
      const abs = absPath(s, dir)
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
        yield await this.#entries(s, dir, infos.slice(i, i + LIST_PAGE), now)
      }
    } catch (err) {
      failure = classify(err, dir)
      throw failure
    } finally {
      void this.#pool.release(s, failure)
    }
  }

  async *read(ctx: OpContext, path: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const s = await this.#acquire(ctx)
    let failure: FsError | undefined
    let complete = false
    let started = false
    /** The server answered RETR with an error: the exchange is over, the session fine. */
    let refused = false
    try {
      const abs = absPath(s, path)
      const start = range?.start ?? 0
      let want = Infinity
      if (range?.end !== undefined) {
        // A range that stops before the end of the file ends the transfer early, which
        // costs the session: learn the size first so that "to the end" is not such a range.
        const size = await s.client.size(abs).catch(() => Infinity)
        if (range.end < size - 1) want = range.end - start + 1
      }
      if (start > 0 && !s.rest) throw new FsError('ENOTSUP', `${path}: this FTP server cannot start a download in the middle`, { path })
      const sink = new DownloadSink()
      started = true
      s.client.downloadTo(sink, abs, start).then(
        () => sink.settle(null),
        (err: unknown) => sink.settle(err),
      )
      let got = 0
      while (got < want) {
        if (ctx.signal.aborted) throw cancelled(path)
        const chunk = await sink.take(Math.min(READ_CHUNK, want - got))
        if (chunk === null) {
          complete = true
          break
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
    const s = await this.#acquire(ctx)
    const abs = absPath(s, path)
    const tmp = `${parentAbs(abs)}/.filegate-${randomBytes(9).toString('base64url')}.part`
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
      if (failure !== undefined && uploadStarted) await this.#discardTemp(tmp)
    }
  }

  async mkdir(ctx: OpContext, dir: string): Promise<void> {
    return this.#with(ctx, dir, async (s) => {
      try {
        await s.client.send(`MKD ${absPath(s, dir)}`)
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
      const abs = absPath(s, path)
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
      await this.#rename(s, absPath(s, from), absPath(s, to), to, target !== null)
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
    const abs = absPath(s, path)
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

  /** Removes a failed upload's temporary file (through the pool: the failed session may be gone). */
  async #discardTemp(tmp: string): Promise<void> {
    try {
      await this.#pool.use(async (x) => {
        if (isBroken(x)) throw lost()
        await x.client.send(`DELE ${tmp}`)
      })
    } catch {
      // The server is gone, or the file was never created: a hidden .part may stay (never listed).
    }
  }

  /** A live session: one whose connection died while idle is discarded, and another taken. */
  async #acquire(ctx: OpContext): Promise<FtpSession> {
    for (;;) {
      const s = await this.#pool.acquire(ctx.signal)
      if (!isBroken(s)) return s
      void this.#pool.release(s, lost())
    }
  }

  async #with<T>(ctx: OpContext, path: string, fn: (s: FtpSession) => Promise<T>): Promise<T> {
    if (ctx.signal.aborted) throw cancelled(path)
    const s = await this.#acquire(ctx)
    let result: T
    try {
      result = await fn(s)
    } catch (err) {
      const e = classify(err, path)
      void this.#pool.release(s, e)
      throw e
    }
    void this.#pool.release(s)
    return result
  }

  /** A page of LIST/MLSD entries → Entries: `.`/`..` and temporary files out, symlinks resolved (dangling ones out). */
  async #entries(s: FtpSession, dir: string, infos: readonly FileInfo[], now: number): Promise<Entry[]> {
    const out: Entry[] = []
    for (const f of infos) {
      if (f.name === '.' || f.name === '..' || f.name === '' || f.name.includes('/') || TEMP_NAME.test(f.name)) continue
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

/** Storage path → remote path. */
function absPath(s: FtpSession, path: string): string {
  if (path === '/') return s.root
  return s.root === '/' ? path : s.root + path
}

function parentAbs(abs: string): string {
  const i = abs.lastIndexOf('/')
  return i <= 0 ? '' : abs.slice(0, i)
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/')
  return i <= 0 ? '/' : path.slice(0, i)
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
  return new FtpDriver(pool, { emptyDirs: true, atomicRename: false, rangeRead: caps.rest, mtimePrecisionMs: mtimes ? 1000 : null }, mtimes)
}
