/**
 * @module gateways/sftp/wire/server
 * The server side of SFTP v3 on one `sftp` subsystem channel (ssh2 does the SSH: key
 * exchange, ciphers, logins, channels; this speaks SFTP over the channel's bytes).
 *
 * - INIT is answered with VERSION 3 and the extensions the session serves; a client
 *   asking a version below 3 is told nothing it could misread: the channel is closed.
 * - Each request is parsed whole, then handed to its handler (`on`); a request type
 *   without one is answered OP_UNSUPPORTED. A packet that does not parse, or longer than
 *   `maxPacket`, closes the channel: its request id cannot be trusted.
 * - Answers are one buffer each; small ones written in the same turn of the event loop
 *   go out as one channel write (one SSH packet instead of one per STATUS).
 * - Bounded: with `MAX_IN_FLIGHT` requests unanswered, or `MAX_QUEUED` bytes of answers
 *   not yet taken by the channel, the gateway stops reading (the client's window then
 *   fills and it waits).
 */
import type { Duplex } from 'node:stream'
import { SFTP_STATUS_TEXT, type SftpStatusCode } from '../../../core/sftp-status.js'
import { type Attrs, Fields, Malformed, Out, PACKET, STATUS, sizeOf } from './codec.js'
import { PacketReader } from './framing.js'

/** The accepted subsystem channel (ssh2's `ServerChannel`; `exit` sends exit-status). */
export type SftpChannel = Duplex & { close(): void; exit?(status: number): void }

export interface NameEntry {
  readonly filename: string
  readonly longname: string
  readonly attrs: Attrs
}

/** The request handlers, by request type; `id` is the request's, for the answer. */
export interface Requests {
  OPEN(id: number, path: string, pflags: number, attrs: Attrs): void
  CLOSE(id: number, handle: Buffer): void
  READ(id: number, handle: Buffer, offset: number, length: number): void
  /** `data` is a view of the received packet: keep it only as long as needed. */
  WRITE(id: number, handle: Buffer, offset: number, data: Buffer): void
  LSTAT(id: number, path: string): void
  FSTAT(id: number, handle: Buffer): void
  SETSTAT(id: number, path: string, attrs: Attrs): void
  FSETSTAT(id: number, handle: Buffer, attrs: Attrs): void
  OPENDIR(id: number, path: string): void
  READDIR(id: number, handle: Buffer): void
  REMOVE(id: number, path: string): void
  MKDIR(id: number, path: string, attrs: Attrs): void
  RMDIR(id: number, path: string): void
  REALPATH(id: number, path: string): void
  STAT(id: number, path: string): void
  RENAME(id: number, from: string, to: string): void
  READLINK(id: number, path: string): void
  SYMLINK(id: number, linkPath: string, targetPath: string): void
  /** `data`: the request's bytes after its name. */
  EXTENDED(id: number, name: string, data: Buffer): void
}

export interface WireOptions {
  /** Largest packet accepted (without its length field); advertised by limits@openssh.com. */
  readonly maxPacket: number
  /** Advertised in VERSION: name → version string. */
  readonly extensions: Readonly<Record<string, string>>
  /** Called once when the channel is over, whatever ended it. */
  readonly onClose: () => void
  /**
   * The connection's socket: corked from a large answer's write to the next tick, so the
   * SSH packets ssh2 makes of it (a 255 KiB DATA is 8 of them) leave in one system call
   * instead of one each (8% less CPU per GiB downloaded, measured).
   */
  readonly socket?: { cork(): void; uncork(): void }
  readonly log: (level: 'debug' | 'info' | 'error', msg: string, fields?: Record<string, unknown>) => void
}

const VERSION = 3
/** Requests unanswered before the gateway stops reading. */
export const MAX_IN_FLIGHT = 256
/** Bytes of answers waiting for the channel before the gateway stops reading. */
const MAX_QUEUED = 8 * 1024 * 1024
/** Answers smaller than this are gathered per event-loop turn. */
const SMALL = 16 * 1024


export class SftpServer {
  private readonly handlers: Partial<Requests> = {}
  private readonly reader: PacketReader
  private initialised = false
  private closed = false
  private inFlight = 0
  private paused = false
  private small: Buffer[] = []
  private smallBytes = 0
  private flushScheduled = false
  private corked = false

  constructor(
    private readonly channel: SftpChannel,
    private readonly opts: WireOptions,
  ) {
    this.reader = new PacketReader(opts.maxPacket)
    channel.on('data', (chunk: Buffer) => {
      if (this.closed) return
      try {
        this.reader.push(chunk, (p) => this.onPacket(p))
      } catch (err) {
        // Never thrown out of an event handler: that would take the whole process down.
        if (err instanceof Malformed) this.opts.log('info', 'sftp protocol error: channel closed', { err: err.message })
        else this.opts.log('error', 'sftp session failed: channel closed', { err: String((err as Error)?.stack ?? err) })
        this.end(1)
      }
    })
    // The client is done (EOF): close our side too, or it waits for us.
    channel.on('end', () => this.end())
    channel.on('drain', () => this.flow())
    channel.on('close', () => this.over())
    channel.on('error', (err: Error) => {
      this.opts.log('debug', 'sftp channel error', { err: err.message })
      this.over()
    })
  }

  on<K extends keyof Requests>(type: K, handler: Requests[K]): void {
    this.handlers[type] = handler as Partial<Requests>[K]
  }

  /**
   * Ends the channel (both ways), with an exit-status first as sshd's subsystems end:
   * 0 when the client ended the session, else `status`. Without one, OpenSSH's ssh exits
   * 255, and so does scp (≥ 9 speaks SFTP) after a transfer that went well.
   */
  end(status = 0): void {
    if (this.closed) return
    this.flush()
    this.channel.exit?.(status)
    this.channel.end()
    this.channel.close()
    this.over()
  }

  status(id: number, code: number, message = SFTP_STATUS_TEXT[code as SftpStatusCode] ?? SFTP_STATUS_TEXT[STATUS.FAILURE]): void {
    const out = new Out(1 + 4 + 4 + sizeOf.string(message) + sizeOf.string('en'))
    this.answer(out.u8(PACKET.STATUS).u32(id).u32(code).string(message).string('en').done())
  }

  handle(id: number, handle: Buffer): void {
    this.answer(new Out(1 + 4 + sizeOf.bytes(handle)).u8(PACKET.HANDLE).u32(id).bytes(handle).done())
  }

  /** `sent`: called once the channel has taken the answer (its bytes are then the socket's to send), or the channel is over. */
  data(id: number, data: Uint8Array, sent?: () => void): void {
    this.answer(new Out(1 + 4 + sizeOf.bytes(data)).u8(PACKET.DATA).u32(id).bytes(data).done(), sent)
  }

  name(id: number, entries: readonly NameEntry[]): void {
    let size = 1 + 4 + 4
    for (const e of entries) size += sizeOf.string(e.filename) + sizeOf.string(e.longname) + sizeOf.attrs(e.attrs)
    const out = new Out(size).u8(PACKET.NAME).u32(id).u32(entries.length)
    for (const e of entries) out.string(e.filename).string(e.longname).attrs(e.attrs)
    this.answer(out.done())
  }

  attrs(id: number, attrs: Attrs): void {
    this.answer(new Out(1 + 4 + sizeOf.attrs(attrs)).u8(PACKET.ATTRS).u32(id).attrs(attrs).done())
  }

  /** `data`: the extension's own reply bytes, after the request id. */
  extendedReply(id: number, data: Buffer): void {
    this.answer(new Out(1 + 4 + data.length).u8(PACKET.EXTENDED_REPLY).u32(id).raw(data).done())
  }

  private over(): void {
    if (this.closed) return
    this.closed = true
    this.small = []
    this.opts.onClose()
  }

  private onPacket(p: Buffer): void {
    const f = new Fields(p)
    const type = f.u8()
    if (!this.initialised) {
      if (type !== PACKET.INIT) throw new Malformed(`packet type ${type} before INIT`)
      const version = f.u32()
      if (version < VERSION) throw new Malformed(`client speaks SFTP version ${version}; version 3 is served`)
      this.initialised = true
      return this.version()
    }
    const id = f.u32()
    this.inFlight++
    this.flow()
    this.dispatch(type, id, f)
  }

  private version(): void {
    const ext = Object.entries(this.opts.extensions)
    let size = 1 + 4
    for (const [name, v] of ext) size += sizeOf.string(name) + sizeOf.string(v)
    const out = new Out(size).u8(PACKET.VERSION).u32(VERSION)
    for (const [name, v] of ext) out.string(name).string(v)
    this.write(out.done())
  }

  /** Reads the request's fields, all of them before any handler runs, then calls it. */
  private dispatch(type: number, id: number, f: Fields): void {
    const h = this.handlers
    switch (type) {
      case PACKET.OPEN: {
        const path = f.string()
        const pflags = f.u32()
        const attrs = f.attrs()
        if (h.OPEN) return h.OPEN(id, path, pflags, attrs)
        break
      }
      case PACKET.CLOSE: {
        const handle = f.bytes()
        if (h.CLOSE) return h.CLOSE(id, handle)
        break
      }
      case PACKET.READ: {
        const handle = f.bytes()
        const offset = f.u64()
        const length = f.u32()
        if (h.READ) return h.READ(id, handle, offset, length)
        break
      }
      case PACKET.WRITE: {
        const handle = f.bytes()
        const offset = f.u64()
        const data = f.bytes()
        if (h.WRITE) return h.WRITE(id, handle, offset, data)
        break
      }
      case PACKET.FSTAT:
      case PACKET.READDIR: {
        const handle = f.bytes()
        const fn = type === PACKET.FSTAT ? h.FSTAT : h.READDIR
        if (fn) return fn(id, handle)
        break
      }
      case PACKET.SETSTAT: {
        const path = f.string()
        const attrs = f.attrs()
        if (h.SETSTAT) return h.SETSTAT(id, path, attrs)
        break
      }
      case PACKET.FSETSTAT: {
        const handle = f.bytes()
        const attrs = f.attrs()
        if (h.FSETSTAT) return h.FSETSTAT(id, handle, attrs)
        break
      }
      case PACKET.MKDIR: {
        const path = f.string()
        const attrs = f.attrs()
        if (h.MKDIR) return h.MKDIR(id, path, attrs)
        break
      }
      case PACKET.LSTAT:
      case PACKET.STAT:
      case PACKET.OPENDIR:
      case PACKET.REMOVE:
      case PACKET.RMDIR:
      case PACKET.REALPATH:
      case PACKET.READLINK: {
        const path = f.string()
        const fn = {
          [PACKET.LSTAT]: h.LSTAT,
          [PACKET.STAT]: h.STAT,
          [PACKET.OPENDIR]: h.OPENDIR,
          [PACKET.REMOVE]: h.REMOVE,
          [PACKET.RMDIR]: h.RMDIR,
          [PACKET.REALPATH]: h.REALPATH,
          [PACKET.READLINK]: h.READLINK,
        }[type]
        if (fn) return fn(id, path)
        break
      }
      case PACKET.RENAME:
      case PACKET.SYMLINK: {
        const a = f.string()
        const b = f.string()
        const fn = type === PACKET.RENAME ? h.RENAME : h.SYMLINK
        if (fn) return fn(id, a, b)
        break
      }
      case PACKET.EXTENDED: {
        const name = f.string()
        if (h.EXTENDED) return h.EXTENDED(id, name, f.rest)
        break
      }
    }
    this.status(id, STATUS.OP_UNSUPPORTED, `request type ${type} is not supported`)
  }

  /** Every request gets exactly one answer. */
  private answer(buf: Buffer, sent?: () => void): void {
    this.inFlight--
    this.write(buf, sent)
    this.flow()
  }

  private write(buf: Buffer, sent?: () => void): void {
    if (this.closed) return sent?.()
    if (buf.length >= SMALL) {
      this.flush()
      this.cork()
      if (sent) this.channel.write(buf, () => sent())
      else this.channel.write(buf)
      return
    }
    sent?.() // gathered small answers are bounded by the requests in flight
    this.small.push(buf)
    this.smallBytes += buf.length
    if (this.smallBytes >= SMALL) return this.flush()
    if (!this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(() => {
        this.flushScheduled = false
        this.flush()
      })
    }
  }

  private flush(): void {
    if (this.small.length === 0 || this.closed) return
    const buf = this.small.length === 1 ? this.small[0]! : Buffer.concat(this.small, this.smallBytes)
    this.small = []
    this.smallBytes = 0
    this.channel.write(buf)
  }

  private cork(): void {
    const socket = this.opts.socket
    if (socket === undefined || this.corked) return
    this.corked = true
    socket.cork()
    process.nextTick(() => {
      this.corked = false
      socket.uncork()
    })
  }

  /** Stops reading while too much is pending, resumes once it has drained. */
  private flow(): void {
    const stop = this.inFlight >= MAX_IN_FLIGHT || this.channel.writableLength >= MAX_QUEUED
    if (stop && !this.paused) {
      this.paused = true
      this.channel.pause()
    } else if (!stop && this.paused) {
      this.paused = false
      this.channel.resume()
    }
  }
}
