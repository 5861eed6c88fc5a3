/**
 * @module workers/drivers/sftp/session
 * Section 3 of the sftp driver: one session is one SSH connection with one SFTP
 * channel; opening (login, host key check, root), closing, probing, and the
 * request helpers an operation uses on its session.
 */
import { createHash } from 'node:crypto'
import type { Client, ConnectConfig, SFTPWrapper, Stats } from 'ssh2'
import { FsError } from '../../../core/errors.js'
import { Status, classify } from './errors.js'
import type { SftpConfig } from './index.js'

/** Read and write request size when the server does not say (OpenSSH's limit is 255 KiB). */
const DEFAULT_IO_LEN = 32 * 1024
/** Never ask for more per request than this, whatever the server allows. */
const MAX_IO_LEN = 256 * 1024
const KEEPALIVE_MS = 15_000

// 3) Sessions ----------------------------------------------------------------

export interface SftpSession {
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

export type Ssh2 = typeof import('ssh2')

/** `SHA256:<base64, no padding>` of a host key blob, as ssh-keygen prints it. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`
}

/** ssh2's callback style → a promise. A synchronous throw (e.g. "Not connected") rejects it. */
export function call<T = void>(fn: (cb: (err: Error | undefined | null, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    fn((err, value) => (err ? reject(err) : resolve(value as T)))
  })
}

/** The SFTP requests the driver makes (sftp's other methods, `on` and the like, pass through). */
const REQUESTS: ReadonlySet<PropertyKey> = new Set([
  'open', 'close', 'read', 'write', 'readdir', 'opendir', 'stat', 'lstat', 'fstat', 'setstat', 'fsetstat', 'futimes',
  'utimes', 'chmod', 'unlink', 'rename', 'ext_openssh_rename', 'mkdir', 'rmdir', 'realpath', 'readlink', 'symlink',
])

/**
 * The channel as the driver uses it: a request made once the channel has closed fails at
 * once. ssh2 answers the requests pending when a channel closes ("No response from
 * server"), but one made afterwards is registered and never sent nor answered: its
 * callback never runs, and the operation (an upload whose server went away between two
 * chunks, say) would wait for ever.
 */
function failingWhenClosed(sftp: SFTPWrapper, isBroken: () => boolean): SFTPWrapper {
  const closed = (): boolean => isBroken() || (sftp as unknown as { outgoing?: { state?: string } }).outgoing?.state !== 'open'
  return new Proxy(sftp, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      const fn = value as (...args: unknown[]) => unknown
      if (!REQUESTS.has(prop)) return fn.bind(target)
      return (...args: unknown[]): unknown => {
        const cb = args[args.length - 1]
        if (closed() && typeof cb === 'function') {
          process.nextTick(cb, new Error('No response from server: the SFTP channel is closed'))
          return undefined
        }
        return fn.apply(target, args)
      }
    },
  })
}

/** ssh2 keeps what the server announced in private fields; read them defensively. */
function serverInfo(sftp: SFTPWrapper): { posixRename: boolean; readLen: number; writeLen: number } {
  const x = sftp as unknown as { _extensions?: Record<string, string>; _maxReadLen?: unknown; _maxWriteLen?: unknown }
  const len = (v: unknown): number => (typeof v === 'number' && v > 0 ? Math.min(v, MAX_IO_LEN) : DEFAULT_IO_LEN)
  return { posixRename: x._extensions?.['posix-rename@openssh.com'] !== undefined, readLen: len(x._maxReadLen), writeLen: len(x._maxWriteLen) }
}

/** Connects, logs in, opens the SFTP channel and resolves the root. */
export function openSession(ssh2: Ssh2, cfg: SftpConfig, timeoutMs: number, signal: AbortSignal): Promise<SftpSession> {
  return new Promise<SftpSession>((resolve, reject) => {
    const client = new ssh2.Client()
    // ssh-keygen prints fingerprints without base64 padding; a client may send it with.
    const expected = cfg.hostkey?.replace(/=+$/, '')
    let presented: string | null = null
    let settled = false
    const fail = (err: unknown): void => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      client.destroy()
      if (presented !== null && expected !== undefined && presented !== expected) {
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
        let broken = false
        const broke = (): void => {
          broken = true
          if (session !== null) session.broken = true
        }
        let session: SftpSession | null = null
        // Listeners from the start: an 'error' without one would crash the worker thread.
        sftp.on('error', broke)
        // 'end' comes as ssh2 fails the pending requests, before their callers run again.
        sftp.on('end', broke)
        sftp.on('close', broke)
        client.on('close', broke)
        client.on('error', broke)
        call<string>((cb) => sftp.realpath(cfg.root === '' ? '.' : cfg.root, cb)).then(
          (root) => {
            if (settled) return
            settled = true
            signal.removeEventListener('abort', onAbort)
            session = { client, sftp: failingWhenClosed(sftp, () => broken || session?.broken === true), root, ...serverInfo(sftp), broken }
            resolve(session)
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
      // A server that stops answering is given up after about `timeoutMs` (and never later than 45 s).
      keepaliveInterval: Math.min(KEEPALIVE_MS, Math.ceil(timeoutMs / 3)),
      keepaliveCountMax: 3,
      tryKeyboard: false,
      ...(cfg.password === undefined ? {} : { password: cfg.password }),
      ...(cfg.privateKey === undefined ? {} : { privateKey: cfg.privateKey }),
      ...(cfg.passphrase === undefined ? {} : { passphrase: cfg.passphrase }),
      hostVerifier: (key: Buffer): boolean => {
        presented = fingerprint(key)
        return expected === undefined || presented === expected
      },
    }
    try {
      client.connect(conf)
    } catch (err) {
      // ssh2 throws synchronously on a private key it cannot parse or decrypt: a wrong or
      // missing passphrase is a credential refused; anything else a malformed key.
      const msg = String((err as Error)?.message ?? err)
      if (/passphrase|decrypt/i.test(msg)) fail(new FsError('EAUTH', 'the private key cannot be decrypted with this passphrase', { cause: err }))
      else if (/key/i.test(msg)) fail(new FsError('EINVAL', `the private key cannot be used: ${msg}`, { cause: err }))
      else fail(err)
    }
  })
}

export function closeSession(s: SftpSession): Promise<void> {
  s.broken = true
  // destroy, not end: a dead peer must not hold the pool's place.
  s.client.destroy()
  return Promise.resolve()
}

/** Resolves when the connection still answers. */
export async function probe(s: SftpSession): Promise<void> {
  if (s.broken) throw new Error('connection closed')
  await call<string>((cb) => s.sftp.realpath('.', cb))
}

// Requests on a session ---------------------------------------------------------

/** A stat that answers null for a missing path. */
export async function statOrNull(s: SftpSession, abs: string, follow = true): Promise<Stats | null> {
  try {
    return await call<Stats>((cb) => (follow ? s.sftp.stat(abs, cb) : s.sftp.lstat(abs, cb)))
  } catch (err) {
    if ((err as { code?: unknown }).code === Status.NO_SUCH_FILE) return null
    throw err
  }
}

/**
 * Reads `len` bytes at `pos` into an owned buffer, with one request per `s.readLen`
 * bytes, all sent at once. Shorter only at the end of the file (empty past it).
 */
export async function readBlock(s: SftpSession, handle: Buffer, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafeSlow(len)
  const parts: Promise<number>[] = []
  for (let off = 0; off < len; off += s.readLen) parts.push(readInto(s, handle, buf, off, Math.min(s.readLen, len - off), pos + off))
  const got = await Promise.all(parts)
  let n = 0
  for (let i = 0; i < got.length; i++) {
    n += got[i]!
    if (got[i]! < Math.min(s.readLen, len - i * s.readLen)) break // the file ends inside this request
  }
  return n === len ? buf : buf.subarray(0, n)
}

/** Fills buf[off, off + len) from `pos`, asking again after a short read; resolves with the bytes read (fewer only at the end of the file). */
async function readInto(s: SftpSession, handle: Buffer, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
  let done = 0
  while (done < len) {
    const n = await new Promise<number>((resolve, reject) => {
      try {
        s.sftp.read(handle, buf, off + done, len - done, pos + done, (err, bytes) => (err ? reject(err) : resolve(bytes)))
      } catch (err) {
        reject(err)
      }
    })
    if (n === 0) break
    done += n
  }
  return done
}
