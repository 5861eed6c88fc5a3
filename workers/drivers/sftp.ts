/**
 * @module workers/drivers/sftp
 * A folder on an SSH server, over SFTP (the `ssh2` client).
 *
 * Sections, in the order every driver keeps: 1) config, 2) classify,
 * 3) sessions, 4) the driver, 5) factory.
 *
 * Sessions: one SSH connection with one SFTP channel each, from the one
 * SessionPool (workers/sessions.ts). An operation holds its session exclusively;
 * a connection that closes or errors is marked broken, and the pool discards it.
 *
 * Speed: SFTP is request/response, so one request in flight (what `createReadStream`
 * does) is bounded by latency (~25 MB/s on loopback, SERVERS.md). Reads keep
 * READ_AHEAD requests of the server's maximum read length in flight and yield them in
 * order; writes coalesce the body into chunks of the maximum write length, with
 * WRITE_AHEAD in flight.
 *
 * Atomic writes: bytes go to a hidden temporary file in the target's folder
 * (`.filegate-<id>.part`, never listed), renamed onto the target once complete: with
 * `posix-rename@openssh.com` when the target may be replaced (atomic), and with a
 * plain SFTP rename when it must not be (OpenSSH's rename refuses an existing target,
 * so "create, never replace" is atomic too).
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Client, ConnectConfig, FileEntryWithStats, SFTPWrapper, Stats } from 'ssh2'
import type { ByteRange, Driver, Entry, Features, OpContext, WriteOptions } from '../../core/driver.js'
import { FsError, isFsError } from '../../core/errors.js'
import { baseName } from '../../core/paths.js'
import { SessionPool, type SessionPoolStats } from '../sessions.js'

// 1) Config ------------------------------------------------------------------

export interface SftpConfig {
  readonly hostname: string
  readonly port: number
  readonly username: string
  readonly password?: string
  readonly privateKey?: string
  readonly passphrase?: string
  /** `SHA256:<base64>` as ssh-keygen prints it; the server's key must match when given. */
  readonly hostkey?: string
  /** Remote folder served as `/`: absolute, relative to the login folder, or '' for the login folder. */
  readonly root: string
  /** Sessions (SSH connections) per driver; default 4. */
  readonly maxSessions?: number
  /** An idle session is closed after this long; default 60 s. */
  readonly idleMs?: number
  /** Connecting and logging in, or waiting for a session; default 20 s. */
  readonly timeoutMs?: number
}

/** Read and write request size when the server does not say (OpenSSH's limit is 255 KiB). */
const DEFAULT_IO_LEN = 32 * 1024
/** Never ask for more per request than this, whatever the server allows. */
const MAX_IO_LEN = 256 * 1024
/** Read requests in flight per transfer: 16 x 255 KiB = ~4 MiB, what fills a fast link. */
const READ_AHEAD = 32
/** Write requests in flight per transfer. */
const WRITE_AHEAD = 8
const LIST_PAGE = 512
const TEMP_NAME = /^\.filegate-[A-Za-z0-9_-]+\.part$/
const KEEPALIVE_MS = 15_000

// 2) classify ----------------------------------------------------------------

/** SFTP v3 status codes (draft-ietf-secsh-filexfer-02, ssh2's utils.sftp.STATUS_CODE). */
const Status = {
  EOF: 1,
  NO_SUCH_FILE: 2,
  PERMISSION_DENIED: 3,
  FAILURE: 4,
  BAD_MESSAGE: 5,
  NO_CONNECTION: 6,
  CONNECTION_LOST: 7,
  OP_UNSUPPORTED: 8,
} as const

/** Connection-level errors from ssh2 and the socket. */
const UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED'])

/**
 * ssh2 / SFTP error → FsError. SFTP v3 has one code for most failures (FAILURE):
 * operations that can tell EEXIST from ENOTEMPTY from other failures do so by
 * looking (a stat) before calling classify. Messages name the storage path only.
 */
export function classify(err: unknown, path?: string): FsError {
  if (isFsError(err)) return err
  const e = (err ?? {}) as { code?: unknown; level?: unknown; message?: unknown }
  const msg = typeof e.message === 'string' ? e.message : String(err)
  const at = path === undefined ? '' : `${path}: `
  const opts = { cause: err, ...(path === undefined ? {} : { path }) }
  if (e.level === 'client-authentication') return new FsError('EAUTH', 'the SFTP server refused the credentials', opts)
  if (e.level === 'client-timeout' || e.code === 'ETIMEDOUT') return new FsError('ETIMEDOUT', 'the SFTP server did not answer in time', opts)
  if (typeof e.code === 'string' && UNAVAILABLE.has(e.code)) return new FsError('EUNAVAILABLE', `the SFTP server cannot be reached (${e.code})`, opts)
  if (e.level === 'client-socket' || e.level === 'client-dns' || e.level === 'protocol' || e.level === 'handshake') {
    return new FsError('EUNAVAILABLE', `the SFTP connection failed: ${msg}`, opts)
  }
  switch (e.code) {
    case Status.NO_SUCH_FILE:
      return new FsError('ENOENT', `${at}no such file or directory`, opts)
    case Status.PERMISSION_DENIED:
      return new FsError('EACCES', `${at}permission denied`, opts)
    case Status.OP_UNSUPPORTED:
      return new FsError('ENOTSUP', `${at}the SFTP server does not support this operation`, opts)
    case Status.BAD_MESSAGE:
      return new FsError('EINVAL', `${at}the SFTP server refused the request`, opts)
    case Status.NO_CONNECTION:
    case Status.CONNECTION_LOST:
      return new FsError('EUNAVAILABLE', 'the SFTP connection was lost', opts)
    case Status.FAILURE:
      return new FsError('EIO', `${at}the SFTP server reported a failure`, opts)
  }
  // ssh2's own words for a channel or connection that went away.
  if (/No response from server|Not connected|Channel .*close|Unable to start subsystem|connection/i.test(msg)) {
    return new FsError('EUNAVAILABLE', 'the SFTP connection was lost', opts)
  }
  return new FsError('EIO', `${at}storage error`, opts)
}

// 3) Sessions ----------------------------------------------------------------

interface SftpSession {
  readonly client: Client
  readonly sftp: SFTPWrapper
  /** Absolute remote folder served as `/` (realpath of the configured root). */
  readonly root: string
  /** The server offers posix-rename@openssh.com (an atomic replacing rename). */
  readonly posixRename: boolean
  readonly readLen: number
  readonly writeLen: number
  /** Set when the connection closed or failed: the pool must not hand it out again. */
  broken: boolean
}

type Ssh2 = typeof import('ssh2')

/** `SHA256:<base64, no padding>` of a host key blob, as ssh-keygen prints it. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`
}

/** ssh2's callback style → a promise. A synchronous throw (e.g. "Not connected") rejects it. */
function call<T = void>(fn: (cb: (err: Error | undefined | null, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    fn((err, value) => (err ? reject(err) : resolve(value as T)))
  })
}

/** ssh2 keeps what the server announced in private fields; read them defensively. */
function serverInfo(sftp: SFTPWrapper): { posixRename: boolean; readLen: number; writeLen: number } {
  const x = sftp as unknown as { _extensions?: Record<string, string>; _maxReadLen?: unknown; _maxWriteLen?: unknown }
  const len = (v: unknown): number => (typeof v === 'number' && v > 0 ? Math.min(v, MAX_IO_LEN) : DEFAULT_IO_LEN)
  return { posixRename: x._extensions?.['posix-rename@openssh.com'] !== undefined, readLen: len(x._maxReadLen), writeLen: len(x._maxWriteLen) }
}

/** Connects, logs in, opens the SFTP channel and resolves the root. */
function openSession(ssh2: Ssh2, cfg: SftpConfig, timeoutMs: number, signal: AbortSignal): Promise<SftpSession> {
  return new Promise<SftpSession>((resolve, reject) => {
    const client = new ssh2.Client()
    let presented: string | null = null
    let settled = false
    const fail = (err: unknown): void => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      client.destroy()
      if (presented !== null && cfg.hostkey !== undefined && presented !== cfg.hostkey) {
        // Not the credentials' fault, and retrying will not help: refused, not retryable.
        reject(new FsError('EUNAVAILABLE', `the SFTP server's host key ${presented} does not match the expected ${cfg.hostkey}`, { cause: err, retryable: false }))
        return
      }
      reject(classify(err))
    }
    const onAbort = (): void => fail(signal.reason ?? new FsError('ECANCELED', 'cancelled'))
    signal.addEventListener('abort', onAbort, { once: true })
    // A permanent listener: an 'error' without one would crash the worker thread.
    client.on('error', (err) => {
      if (!settled) fail(err)
    })
    client.once('close', () => fail(new FsError('EUNAVAILABLE', 'the SFTP server closed the connection during login')))
    client.once('ready', () => {
      client.sftp((err, sftp) => {
        if (err) return fail(err)
        call<string>((cb) => sftp.realpath(cfg.root === '' ? '.' : cfg.root, cb)).then(
          (root) => {
            if (settled) return
            settled = true
            signal.removeEventListener('abort', onAbort)
            const s: SftpSession = { client, sftp, root, ...serverInfo(sftp), broken: false }
            const broke = (): void => {
              s.broken = true
            }
            client.on('close', broke)
            client.on('error', broke)
            sftp.on('close', broke)
            sftp.on('error', broke)
            resolve(s)
          },
          (err: unknown) =>
            fail(
              (err as { code?: unknown }).code === Status.NO_SUCH_FILE
                ? new FsError('ENOENT', 'the storage root folder does not exist on the SFTP server', { cause: err })
                : err,
            ),
        )
      })
    })
    const conf: ConnectConfig = {
      host: cfg.hostname,
      port: cfg.port,
      username: cfg.username,
      readyTimeout: timeoutMs,
      keepaliveInterval: KEEPALIVE_MS,
      keepaliveCountMax: 3,
      tryKeyboard: false,
      ...(cfg.password === undefined ? {} : { password: cfg.password }),
      ...(cfg.privateKey === undefined ? {} : { privateKey: cfg.privateKey }),
      ...(cfg.passphrase === undefined ? {} : { passphrase: cfg.passphrase }),
      hostVerifier: (key: Buffer): boolean => {
        presented = fingerprint(key)
        return cfg.hostkey === undefined || presented === cfg.hostkey
      },
    }
    try {
      client.connect(conf)
    } catch (err) {
      // ssh2 throws synchronously on a private key it cannot parse (or a wrong passphrase).
      const msg = String((err as Error)?.message ?? err)
      fail(/key|passphrase/i.test(msg) ? new FsError('EINVAL', `the private key cannot be used: ${msg}`, { cause: err }) : err)
    }
  })
}

function closeSession(s: SftpSession): Promise<void> {
  s.broken = true
  // destroy, not end: a dead peer must not hold the pool's place.
  s.client.destroy()
  return Promise.resolve()
}

/** Resolves when the connection still answers. */
async function probe(s: SftpSession): Promise<void> {
  if (s.broken) throw new Error('connection closed')
  await call<string>((cb) => s.sftp.realpath('.', cb))
}

// 4) The driver --------------------------------------------------------------

/** A stat that answers null for a missing path. */
async function statOrNull(s: SftpSession, abs: string, follow = true): Promise<Stats | null> {
  try {
    return await call<Stats>((cb) => (follow ? s.sftp.stat(abs, cb) : s.sftp.lstat(abs, cb)))
  } catch (err) {
    if ((err as { code?: unknown }).code === Status.NO_SUCH_FILE) return null
    throw err
  }
}

function toEntry(path: string, st: Stats, link = false): Entry {
  const dir = st.isDirectory()
  const e: Entry = { path, name: baseName(path), kind: dir ? 'dir' : 'file', size: dir ? 0 : st.size, mtimeMs: st.mtime * 1000 }
  return link ? { ...e, link } : e
}

const cancelled = (path: string): FsError => new FsError('ECANCELED', 'cancelled', { path })

/** One read request; the buffer is fresh and owned by whoever receives it. */
function readAt(s: SftpSession, handle: Buffer, pos: number, len: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const buf = Buffer.allocUnsafeSlow(len)
    try {
      s.sftp.read(handle, buf, 0, len, pos, (err, n) => {
        if (err) return reject(err)
        resolve(n === len ? buf : buf.subarray(0, n))
      })
    } catch (err) {
      reject(err)
    }
  })
}

/** Requests in flight, remembering the first failure (none is left unobserved). */
class InFlight {
  readonly #pending = new Set<Promise<void>>()
  #error: unknown = null

  add(p: Promise<unknown>): void {
    const tracked: Promise<void> = p.then(
      () => void this.#pending.delete(tracked),
      (err: unknown) => {
        this.#pending.delete(tracked)
        this.#error ??= err
      },
    )
    this.#pending.add(tracked)
  }

  get size(): number {
    return this.#pending.size
  }

  /** Waits until fewer than `n` are in flight; throws the first failure. */
  async below(n: number): Promise<void> {
    this.#check()
    while (this.#pending.size >= n) {
      await Promise.race(this.#pending)
      this.#check()
    }
  }

  async all(): Promise<void> {
    await Promise.all(this.#pending)
    this.#check()
  }

  #check(): void {
    if (this.#error !== null) throw this.#error
  }
}

/** Cuts a body into chunks of exactly `len` bytes (the last may be shorter), copying only when a chunk spans parts. */
async function* rechunk(body: AsyncIterable<Uint8Array>, len: number): AsyncIterable<Buffer> {
  let parts: Buffer[] = []
  let have = 0
  for await (const chunk of body) {
    let c = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    while (c.length > 0) {
      if (have === 0 && c.length >= len) {
        yield c.subarray(0, len)
        c = c.subarray(len)
        continue
      }
      const take = Math.min(len - have, c.length)
      parts.push(c.subarray(0, take))
      have += take
      c = c.subarray(take)
      if (have === len) {
        yield Buffer.concat(parts, have)
        parts = []
        have = 0
      }
    }
  }
  if (have > 0) yield Buffer.concat(parts, have)
}

class SftpDriver implements Driver {
  readonly kind = 'sftp'
  readonly features: Features
  readonly #pool: SessionPool<SftpSession>

  constructor(pool: SessionPool<SftpSession>, features: Features) {
    this.#pool = pool
    this.features = features
  }

  async stat(ctx: OpContext, path: string): Promise<Entry> {
    return this.#with(ctx, path, async (s) => {
      const abs = absPath(s, path)
      const lst = await call<Stats>((cb) => s.sftp.lstat(abs, cb))
      return lst.isSymbolicLink() ? toEntry(path, await call<Stats>((cb) => s.sftp.stat(abs, cb)), true) : toEntry(path, lst)
    })
  }

  async *list(ctx: OpContext, dir: string): AsyncIterable<readonly Entry[]> {
    const s = await this.#acquire(ctx)
    let failure: FsError | undefined
    let handle: Buffer | null = null
    try {
      const abs = absPath(s, dir)
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
    const s = await this.#acquire(ctx)
    let failure: FsError | undefined
    let handle: Buffer | null = null
    const inflight: { pos: number; len: number; data: Promise<Buffer> }[] = []
    try {
      handle = await call<Buffer>((cb) => s.sftp.open(absPath(s, path), 'r', cb))
      const h = handle
      const st = await call<Stats>((cb) => s.sftp.fstat(h, cb))
      if (st.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      const end = Math.min(range?.end ?? Infinity, st.size - 1) // inclusive
      let next = range?.start ?? 0
      const request = (pos: number, len: number): void => {
        const data = readAt(s, h, pos, len)
        data.catch(() => {}) // observed when its turn comes; never an unhandled rejection
        inflight.push({ pos, len, data })
      }
      const fill = (): void => {
        while (inflight.length < ((globalThis as any).__v?.ahead ?? READ_AHEAD) && next <= end) {
          const len = Math.min(s.readLen, end - next + 1)
          request(next, len)
          next += len
        }
      }
      fill()
      while (inflight.length > 0) {
        if (ctx.signal.aborted) throw cancelled(path)
        const head = inflight.shift()!
        const buf = await head.data
        if (buf.length === 0) break // end of file: it shrank while we read it
        if (buf.length < head.len) {
          // A short read (the server may return less than asked): ask for the rest first.
          const data = readAt(s, h, head.pos + buf.length, head.len - buf.length)
          data.catch(() => {})
          inflight.unshift({ pos: head.pos + buf.length, len: head.len - buf.length, data })
        }
        // Refilled in batches, not one request per answer: many small requests written
        // in one go cost the SSH layer far less than one at a time (measured: ~2x).
        const V = (globalThis as any).__v ?? { ahead: READ_AHEAD, low: READ_AHEAD / 2, imm: false }
        if (inflight.length <= V.low) { if (V.imm) await new Promise((r) => setImmediate(r)); fill() }
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
      const abs = absPath(s, path)
      const existing = await statOrNull(s, abs)
      if (existing?.isDirectory()) throw new FsError('EISDIR', `${path}: is a directory`, { path })
      if (existing && opts.overwrite === false) throw new FsError('EEXIST', `${path}: already exists`, { path })
      const tmp = `${parentAbs(abs)}/.filegate-${randomBytes(9).toString('base64url')}.part`
      let handle: Buffer | null = null
      try {
        handle = await call<Buffer>((cb) => s.sftp.open(tmp, 'wx', { mode: 0o644 }, cb))
        const h = handle
        const flight = new InFlight()
        let pos = 0
        for await (const chunk of rechunk(body, s.writeLen)) {
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
        if (!s.broken) await call((cb) => s.sftp.unlink(tmp, cb)).catch(() => {})
        if (isFsError(err)) throw err
        throw (err as { code?: unknown }).code === Status.NO_SUCH_FILE
          ? new FsError('ENOENT', `${path}: the parent folder does not exist`, { path, cause: err })
          : classify(err, path)
      }
      return toEntry(path, await call<Stats>((cb) => s.sftp.stat(abs, cb)))
    })
  }

  async mkdir(ctx: OpContext, dir: string): Promise<void> {
    return this.#with(ctx, dir, async (s) => {
      const abs = absPath(s, dir)
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
      const abs = absPath(s, path)
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
      const src = absPath(s, from)
      const dst = absPath(s, to)
      await call<Stats>((cb) => s.sftp.lstat(src, cb))
      const target = await statOrNull(s, dst, false)
      if (target && (!opts.overwrite || target.isDirectory())) throw new FsError('EEXIST', `${to}: already exists`, { path: to })
      await this.#place(s, src, dst, to, target !== null)
    })
  }

  async setMtime(ctx: OpContext, path: string, mtimeMs: number): Promise<void> {
    return this.#with(ctx, path, (s) =>
      call((cb) => s.sftp.utimes(absPath(s, path), Math.floor(Date.now() / 1000), Math.floor(mtimeMs / 1000), cb)),
    )
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
  async #acquire(ctx: OpContext): Promise<SftpSession> {
    for (;;) {
      const s = await this.#pool.acquire(ctx.signal)
      if (!s.broken) return s
      void this.#pool.release(s, new FsError('EUNAVAILABLE', 'the SFTP connection was lost'))
    }
  }

  /** Runs `fn` with a session; errors come out classified, and tell the pool whether the session is still good. */
  async #with<T>(ctx: OpContext, path: string, fn: (s: SftpSession) => Promise<T>): Promise<T> {
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

  async #closeHandle(s: SftpSession, handle: Buffer): Promise<void> {
    if (s.broken) return
    await call((cb) => s.sftp.close(handle, cb)).catch(() => {})
  }

  /** A readdir batch → entries: `.`/`..` and temporary files left out, symlinks followed (dangling ones left out). */
  async #entries(s: SftpSession, dir: string, batch: readonly FileEntryWithStats[]): Promise<Entry[]> {
    const out = await Promise.all(
      batch.map(async (f): Promise<Entry | null> => {
        if (f.filename === '.' || f.filename === '..' || TEMP_NAME.test(f.filename)) return null
        const path = dir === '/' ? `/${f.filename}` : `${dir}/${f.filename}`
        if (!f.attrs.isSymbolicLink()) return toEntry(path, f.attrs)
        const st = await statOrNull(s, absPath(s, path))
        return st === null ? null : toEntry(path, st, true)
      }),
    )
    return out.filter((e): e is Entry => e !== null)
  }
}

/** Storage path → remote absolute path. */
function absPath(s: SftpSession, path: string): string {
  if (path === '/') return s.root
  return s.root === '/' ? path : s.root + path
}

function parentAbs(abs: string): string {
  const i = abs.lastIndexOf('/')
  return i <= 0 ? '' : abs.slice(0, i)
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
  return new SftpDriver(pool, { emptyDirs: true, atomicRename: posixRename, rangeRead: true, mtimePrecisionMs: 1000 })
}
