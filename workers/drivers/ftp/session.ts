/**
 * @module workers/drivers/ftp/session
 * Section 3 of the ftp driver: one session is one control connection; opening
 * (login, FEAT, root), closing, probing; and what a session reads and writes: PWD,
 * LIST and MDTM dates, and the sink a download is piped into.
 */
import { Writable } from 'node:stream'
import type { Client } from 'basic-ftp'
import { FsError } from '../../../core/errors.js'
import { ByteQueue } from '../../rechunk.js'
import { classify, ftpCode } from './errors.js'
import type { FtpConfig } from './index.js'

/** Bytes a download buffers before the data connection is paused. */
const READ_BUFFER = 2 * 1024 * 1024

// 3) Sessions ----------------------------------------------------------------

export interface FtpSession {
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

export type BasicFtp = typeof import('basic-ftp')

export const isBroken = (s: FtpSession): boolean => s.broken || s.client.closed

/** PWD's answer, `257 "<path>" ...` with `"` doubled inside (RFC 959). */
export async function pwd(client: Client): Promise<string> {
  const res = await client.send('PWD')
  const m = /^257 "((?:[^"]|"")*)"/.exec(res.message)
  if (!m) throw new FsError('EIO', 'the FTP server gave an unreadable PWD answer')
  return m[1]!.replace(/""/g, '"')
}

export async function openSession(ftp: BasicFtp, cfg: FtpConfig, timeoutMs: number, signal: AbortSignal): Promise<FtpSession> {
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

export function closeSession(s: FtpSession): Promise<void> {
  s.broken = true
  s.client.close() // destroys the sockets: never waits for a dead peer
  return Promise.resolve()
}

export async function probe(s: FtpSession): Promise<void> {
  if (isBroken(s)) throw new Error('connection closed')
  await s.client.send('NOOP')
}

// Formats and transfers ---------------------------------------------------------

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
export function parseMdtm(message: string): number | null {
  const m = /(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.(\d{1,3}))?/.exec(message.slice(4))
  if (!m) return null
  const [, y, mo, d, h, mi, se, ms] = m
  return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se), ms === undefined ? 0 : Number(ms.padEnd(3, '0')))
}

export function mfmtStamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)
}

/**
 * The download side of a transfer: a Writable that basic-ftp pipes the data
 * connection into, and that the read generator pulls from. It holds at most
 * READ_BUFFER bytes (then the data connection pauses), and reports the end only when
 * the transfer itself has completed, never merely because the stream was ended
 * (basic-ftp ends it on failures too).
 */
export class DownloadSink extends Writable {
  readonly #queue = new ByteQueue()
  #held: (() => void) | null = null
  #wake: (() => void) | null = null
  #done = false
  #error: unknown = null

  constructor() {
    super({ highWaterMark: READ_BUFFER })
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#queue.push(chunk)
    if (this.#queue.size < READ_BUFFER) cb()
    else this.#held = () => cb()
    this.#notify()
  }

  /** The transfer completed (true) or failed. */
  settle(error: unknown): void {
    if (error === null) this.#done = true
    else this.#error ??= error
    this.#notify()
  }

  /** Up to `max` bytes in an owned buffer; null at the end. @throws the transfer's error */
  async take(max: number): Promise<Buffer | null> {
    while (this.#queue.size === 0) {
      if (this.#error !== null) throw this.#error
      if (this.#done) return null
      await new Promise<void>((resolve) => (this.#wake = resolve))
    }
    const out = this.#queue.take(max)
    if (this.#held !== null && this.#queue.size < READ_BUFFER) {
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
