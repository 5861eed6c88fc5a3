/**
 * @module workers/drivers/smb/session
 * Section 3 of the smb driver: one SMB2 session (a TCP connection, an NTLMv2 login
 * and a tree connect to the share) and the requests the driver needs.
 *
 * The protocol pieces come from `@tryjsky/v9u-smb2` (the NTLMv2 fork of
 * `@marsaud/smb2`): its message encoder and structures, and its NTLMv2 code
 * (`@tryjsky/ntlm2`, pure JS MD4, so no `--openssl-legacy-provider`). Its high-level
 * API is not used, because on these machines (README, "Backends: s3, smb") it
 * crashes the process on socket errors (an error handler that rethrows), hangs
 * forever when the connection drops (no timeouts, pending callbacks never called),
 * fails on the interim STATUS_PENDING replies Samba sends with its default
 * asynchronous I/O, leaks handles on error paths, opens files with write-through,
 * and sends one 64 KiB request at a time.
 *
 * What this file adds instead: the transport (NetBIOS framing, replies dispatched by
 * message id, interim replies skipped, SMB2 credits respected), a timeout on every
 * request, and containment: any socket error, malformed reply or exception in a
 * handler kills this session only (every pending request rejects, the pool opens a
 * new one) and never reaches the process. Reads and writes are pipelined (many
 * requests in flight), of up to 4 MiB each with SMB 2.1's large MTU (multi-credit
 * requests: one credit and one message id per 64 KiB), else 64 KiB. Every failure is data: NtStatusError,
 * SmbTransportError (errors.ts) or FsError.
 *
 * Limits of the protocol level: SMB 2.0.2 and 2.1, without signing or encryption, so
 * a server that requires either refuses with a clear error (see the README).
 */
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { type Socket, connect } from 'node:net'
import { FrameReader } from '../../../core/frames.js'
import { FsError } from '../../../core/errors.js'
import { NtStatusError, STATUS, SmbTransportError } from './errors.js'
import type { SmbSpec } from '../../../core/backend.js'

// The library (CommonJS, untyped internals) ---------------------------------

interface LibMessage {
  isMessageIdSetted?: boolean
  headers: Record<string, unknown>
  getBuffer(connection: { messageId: number }): Buffer
}

interface NtlmType2 {
  readonly flags: number
  readonly version: number
}

interface Lib {
  readonly SMB2Message: new (opts: { headers: Record<string, unknown>; request?: Record<string, unknown> }) => LibMessage
  readonly ntlm: {
    encodeType1(workstation?: string, target?: string): Buffer
    decodeType2(buf: Buffer): NtlmType2
    encodeType3(type2: NtlmType2, username: string, password: string, workstation?: string, target?: string): Buffer
  }
}

let lib: Lib | null = null

/** Loads the library on first use (a worker that never opens SMB never loads it). */
function loadLib(): Lib {
  if (lib) return lib
  const main = createRequire(import.meta.url).resolve('@tryjsky/v9u-smb2')
  const req = createRequire(main)
  lib = { SMB2Message: req('./tools/smb2-message') as Lib['SMB2Message'], ntlm: req('@tryjsky/ntlm2') as Lib['ntlm'] }
  return lib
}

// Constants ------------------------------------------------------------------

/** Largest READ/WRITE without the large-MTU capability, and what one credit pays for (MS-SMB2 3.1.5.2). */
export const IO_BLOCK = 65536
/**
 * Largest READ/WRITE asked for when the server offers SMB 2.1's large MTU: bigger
 * requests mean fewer round trips and replies to parse; Samba and Windows allow 8 MiB.
 */
const LARGE_IO = 4 * 1024 * 1024
/** SMB2_GLOBAL_CAP_LARGE_MTU: multi-credit requests (MS-SMB2 2.2.3). */
const CAP_LARGE_MTU = 0x4
const DIALECT_2_1 = 0x0210
/** Requests the server may answer at once per session (credits requested per reply). */
const CREDIT_REQUEST = 126

const CMD = { NEGOTIATE: 0x00, SESSION_SETUP: 0x01, TREE_CONNECT: 0x03, CREATE: 0x05, CLOSE: 0x06, READ: 0x08, WRITE: 0x09, QUERY_DIRECTORY: 0x0e, SET_INFO: 0x11 } as const

/** Access masks (MS-SMB2 2.2.13.1). */
export const ACCESS = {
  READ_DATA: 0x1,
  WRITE_DATA: 0x2,
  APPEND_DATA: 0x4,
  READ_ATTRIBUTES: 0x80,
  WRITE_ATTRIBUTES: 0x100,
  DELETE: 0x10000,
  SYNCHRONIZE: 0x100000,
} as const

export const DISPOSITION = { OPEN: 1, CREATE: 2 } as const
export const OPTIONS = { DIRECTORY: 0x1, NON_DIRECTORY: 0x40, DELETE_ON_CLOSE: 0x1000 } as const
export const SHARE_ALL = 0x7
const ATTR_DIRECTORY = 0x10

const INFO_CLASS = { BASIC: 4, RENAME: 10, DISPOSITION: 13 } as const

/** Windows FILETIME (100 ns since 1601) ↔ ms since 1970. */
const EPOCH_DIFF_MS = 11_644_473_600_000n
export const fromFiletime = (ft: bigint): number | null => (ft === 0n ? null : Number(ft / 10_000n - EPOCH_DIFF_MS))
export const toFiletime = (ms: number): bigint => (BigInt(Math.round(ms)) + EPOCH_DIFF_MS) * 10_000n

// Types ----------------------------------------------------------------------

/** Where and as whom to log in: the spec's server fields (core/backend.ts). */
export interface SmbLogin extends Omit<SmbSpec, 'type' | 'root'> {
  /** Per request, and for connecting. */
  readonly timeoutMs: number
}

/** What CREATE answers: enough for stat. */
export interface OpenFile {
  readonly fileId: Buffer
  readonly isDir: boolean
  readonly size: number
  readonly mtimeMs: number | null
}

export interface DirEntry {
  readonly name: string
  readonly isDir: boolean
  readonly size: number
  readonly mtimeMs: number | null
}

interface Pending {
  readonly command: number
  readonly resolve: (frame: Buffer) => void
  readonly reject: (err: Error) => void
  timer: NodeJS.Timeout
}

/** A request queued until the server grants its credits. */
interface Queued {
  /** Credits (and message ids) it consumes: 1, or one per 64 KiB of a large READ/WRITE. */
  readonly charge: number
  readonly send: (id: number) => void
  readonly reject: (err: Error) => void
}

// The session ----------------------------------------------------------------

export class SmbSession {
  readonly #lib: Lib
  readonly #socket: Socket
  readonly #timeoutMs: number
  readonly #processId = randomBytes(4)
  #sessionId: Buffer = Buffer.alloc(8)
  #treeId = 0
  #nextId = 0
  #credits = 1
  /** Multi-credit requests (SMB 2.1 with the large MTU): READ/WRITE up to readLen/writeLen. */
  #multiCredit = false
  /** Largest READ this session sends (IO_BLOCK without the large MTU). */
  readLen = IO_BLOCK
  /** Largest WRITE this session sends. */
  writeLen = IO_BLOCK
  readonly #queue: Queued[] = []
  readonly #pending = new Map<number, Pending>()
  /** NetBIOS session messages: a zero type byte, then the SMB2 message's 24-bit length. */
  readonly #frames = new FrameReader((head) => {
    if (head[0] !== 0) throw new Error(`NetBIOS message type ${head[0]}`)
    return head.readUInt32BE(0) & 0xffffff
  })
  #dead: SmbTransportError | null = null

  private constructor(lib: Lib, socket: Socket, timeoutMs: number) {
    this.#lib = lib
    this.#socket = socket
    this.#timeoutMs = timeoutMs
    // Every event handler is contained: whatever happens, this session dies, the process does not.
    socket.on('data', (chunk: Buffer) => {
      try {
        this.#onData(chunk)
      } catch (err) {
        this.kill(new SmbTransportError('EIO', 'the SMB server sent a reply this client cannot read', err))
      }
    })
    socket.on('error', (err) => this.kill(new SmbTransportError('EUNAVAILABLE', `the SMB connection failed (${(err as NodeJS.ErrnoException).code ?? err.message})`, err)))
    socket.on('end', () => this.kill(new SmbTransportError('EUNAVAILABLE', 'the SMB server closed the connection')))
    socket.on('close', () => this.kill(new SmbTransportError('EUNAVAILABLE', 'the SMB connection closed')))
  }

  /** Connects, negotiates, logs in and connects the share. @throws SmbTransportError | NtStatusError */
  static async open(login: SmbLogin, signal: AbortSignal): Promise<SmbSession> {
    const l = loadLib()
    const socket = connect({ host: login.hostname, port: login.port, noDelay: true })
    const session = new SmbSession(l, socket, login.timeoutMs)
    const onAbort = (): void => session.kill(new SmbTransportError('ETIMEDOUT', 'connecting to the SMB server took too long'))
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      await session.#connected(login.timeoutMs)
      await session.#handshake(login)
      return session
    } catch (err) {
      // A library exception (a malformed challenge, say) is a failed login too, never a crash.
      const e = err instanceof NtStatusError || err instanceof SmbTransportError || err instanceof FsError ? err : new SmbTransportError('EUNAVAILABLE', 'the SMB login failed', err)
      session.kill(e instanceof SmbTransportError ? e : new SmbTransportError('EUNAVAILABLE', 'the SMB login failed', e))
      throw e
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  /** Why the session is unusable, or null while it works. */
  get dead(): SmbTransportError | null {
    return this.#dead
  }

  /** Ends the session now: pending requests reject with `err`, the socket is destroyed. */
  kill(err: SmbTransportError): void {
    if (this.#dead) return
    this.#dead = err
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer)
      p.reject(err)
    }
    this.#pending.clear()
    for (const q of this.#queue.splice(0)) q.reject(err)
    this.#socket.destroy()
  }

  // File operations ------------------------------------------------------------

  /** CREATE: opens or creates `path` (share-relative, `\` separated, '' = the share's root). */
  async create(path: string, o: { access: number; disposition: number; options: number; share?: number }): Promise<OpenFile> {
    const frame = await this.#request(CMD.CREATE, 'CREATE', {
      Buffer: Buffer.from(path, 'ucs2'),
      DesiredAccess: o.access,
      FileAttributes: 0,
      ShareAccess: o.share ?? SHARE_ALL,
      CreateDisposition: o.disposition,
      CreateOptions: o.options,
      NameOffset: 0x78,
      CreateContextsOffset: 0,
    })
    ok(frame, 'CREATE')
    const attrs = frame.readUInt32LE(120)
    const isDir = (attrs & ATTR_DIRECTORY) !== 0
    return {
      fileId: Buffer.from(frame.subarray(128, 144)),
      isDir,
      size: isDir ? 0 : Number(frame.readBigUInt64LE(112)),
      mtimeMs: fromFiletime(frame.readBigUInt64LE(88)),
    }
  }

  async close(fileId: Buffer): Promise<void> {
    ok(await this.#request(CMD.CLOSE, 'CLOSE', { FileId: fileId }), 'CLOSE')
  }

  /** One READ of at most `readLen` bytes; a view into the reply (copy it before keeping it). Empty at the end of the file. */
  async read(fileId: Buffer, offset: number, length: number): Promise<Buffer> {
    const body = Buffer.alloc(49)
    body.writeUInt16LE(49, 0)
    body.writeUInt8(0x50, 2) // Padding: data right after the 16-byte reply body
    body.writeUInt32LE(length, 4)
    body.writeBigUInt64LE(BigInt(offset), 8)
    fileId.copy(body, 16)
    const frame = await this.#raw(CMD.READ, 'READ', body, undefined, length)
    const status = frame.readUInt32LE(8)
    if (status === STATUS.END_OF_FILE) return Buffer.alloc(0)
    ok(frame, 'READ')
    const dataOffset = frame.readUInt8(66)
    const dataLength = frame.readUInt32LE(68)
    if (dataOffset + dataLength > frame.length) throw new SmbTransportError('EIO', 'the SMB server sent a truncated READ reply')
    return frame.subarray(dataOffset, dataOffset + dataLength)
  }

  /** One WRITE of at most `writeLen` bytes. `data` must not change until it resolves. */
  async write(fileId: Buffer, offset: number, data: Uint8Array): Promise<number> {
    const body = Buffer.alloc(48)
    body.writeUInt16LE(49, 0)
    body.writeUInt16LE(64 + 48, 2) // DataOffset
    body.writeUInt32LE(data.byteLength, 4)
    body.writeBigUInt64LE(BigInt(offset), 8)
    fileId.copy(body, 16)
    const frame = await this.#raw(CMD.WRITE, 'WRITE', body, data, data.byteLength)
    ok(frame, 'WRITE')
    return frame.readUInt32LE(68)
  }

  /** One page of a directory (FileIdBothDirectoryInformation); null once it is exhausted. */
  async queryDirectory(fileId: Buffer): Promise<DirEntry[] | null> {
    const frame = await this.#request(CMD.QUERY_DIRECTORY, 'QUERY_DIRECTORY', {
      FileInformationClass: 0x25,
      FileId: fileId,
      FileNameOffset: 96,
      Buffer: Buffer.from('*', 'ucs2'),
      OutputBufferLength: IO_BLOCK,
    })
    if (frame.readUInt32LE(8) === STATUS.NO_MORE_FILES) return null
    ok(frame, 'QUERY_DIRECTORY')
    const off = frame.readUInt16LE(66)
    const len = frame.readUInt32LE(68)
    return parseDirectory(frame.subarray(off, off + len))
  }

  /** Marks an open file or directory for deletion when its handle closes. */
  async deleteOnClose(fileId: Buffer, on = true): Promise<void> {
    await this.#setInfo(fileId, INFO_CLASS.DISPOSITION, Buffer.from([on ? 1 : 0]))
  }

  /** Renames an open file or directory (opened with DELETE access) to a share-relative path. */
  async rename(fileId: Buffer, to: string, replace: boolean): Promise<void> {
    const name = Buffer.from(to, 'ucs2')
    const info = Buffer.alloc(20 + name.length)
    info.writeUInt8(replace ? 1 : 0, 0)
    info.writeUInt32LE(name.length, 16)
    name.copy(info, 20)
    await this.#setInfo(fileId, INFO_CLASS.RENAME, info)
  }

  /** Sets the last-write time of an open file (0 leaves the other times as they are). */
  async setMtime(fileId: Buffer, mtimeMs: number): Promise<void> {
    const info = Buffer.alloc(40)
    info.writeBigUInt64LE(toFiletime(mtimeMs), 16)
    await this.#setInfo(fileId, INFO_CLASS.BASIC, info)
  }

  async #setInfo(fileId: Buffer, infoClass: number, info: Buffer): Promise<void> {
    const frame = await this.#request(CMD.SET_INFO, 'SET_INFO', { InfoType: 1, FileInfoClass: infoClass, FileId: fileId, Buffer: info })
    ok(frame, 'SET_INFO')
  }

  // Login ------------------------------------------------------------------------

  #connected(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new SmbTransportError('ETIMEDOUT', `the SMB server did not accept a connection within ${timeoutMs} ms`)), timeoutMs)
      const fail = (err: SmbTransportError): void => {
        clearTimeout(timer)
        this.#socket.off('connect', done)
        this.kill(err)
        reject(err)
      }
      const done = (): void => {
        clearTimeout(timer)
        resolve()
      }
      this.#socket.once('connect', done)
      this.#socket.once('close', () => fail(this.#dead ?? new SmbTransportError('EUNAVAILABLE', 'the SMB server cannot be reached')))
    })
  }

  async #handshake(login: SmbLogin): Promise<void> {
    // A client GUID of its own for every connection, as Linux's cifs client does. With
    // one GUID for all (the library's default is zeros), Samba hands each new connection
    // over to the process that serves the first (SMB 2.1's client table): every session
    // then queues in that one process, and opening one waits while that process is busy.
    const neg = await this.#request(CMD.NEGOTIATE, 'NEGOTIATE', { Capabilities: CAP_LARGE_MTU, ClientGuid: randomBytes(16) })
    if (neg.readUInt32LE(8) === STATUS.NOT_SUPPORTED) {
      throw new SmbTransportError('ENOTSUP', 'the SMB server accepts only SMB 3, and this SMB client speaks SMB 2.0.2 and 2.1 (Samba: "server min protocol" must allow SMB2_02 or SMB2_10)')
    }
    ok(neg, 'NEGOTIATE')
    const securityMode = neg.readUInt16LE(66)
    if ((securityMode & 0x2) !== 0) {
      throw new SmbTransportError('ENOTSUP', 'the SMB server requires message signing, which this SMB client cannot do (set "server signing = auto" on Samba)')
    }
    // NEGOTIATE response (MS-SMB2 2.2.4): DialectRevision, Capabilities, MaxReadSize, MaxWriteSize.
    if (neg.readUInt16LE(68) === DIALECT_2_1 && (neg.readUInt32LE(88) & CAP_LARGE_MTU) !== 0) {
      const fit = (max: number): number => Math.max(IO_BLOCK, Math.min(LARGE_IO, Math.floor(max / IO_BLOCK) * IO_BLOCK))
      this.#multiCredit = true
      this.readLen = fit(neg.readUInt32LE(96))
      this.writeLen = fit(neg.readUInt32LE(100))
    }
    const first = await this.#request(CMD.SESSION_SETUP, 'SESSION_SETUP', { Buffer: this.#lib.ntlm.encodeType1() })
    if (first.readUInt32LE(8) !== STATUS.MORE_PROCESSING_REQUIRED) ok(first, 'SESSION_SETUP')
    this.#sessionId = Buffer.from(first.subarray(40, 48))
    const type2 = this.#lib.ntlm.decodeType2(securityBuffer(first))
    if (type2.version !== 2) {
      throw new SmbTransportError('ENOTSUP', 'the SMB server offers only NTLMv1, which this SMB client does not support')
    }
    const type3 = this.#lib.ntlm.encodeType3(type2, login.username, login.password, '', login.domain)
    const second = await this.#request(CMD.SESSION_SETUP, 'SESSION_SETUP', { Buffer: type3 })
    refused(second)
    ok(second, 'SESSION_SETUP')
    const flags = second.readUInt16LE(66)
    if ((flags & 0x3) !== 0) {
      // Samba's "map to guest = bad user" logs unknown users in as guest: that is a wrong login here.
      throw new SmbTransportError('EAUTH', 'the SMB server refused the user name or password (it offered a guest session)')
    }
    const tree = await this.#request(CMD.TREE_CONNECT, 'TREE_CONNECT', { Buffer: Buffer.from(`\\\\${login.hostname}\\${login.share}`, 'ucs2') })
    refused(tree)
    ok(tree, 'TREE_CONNECT')
    this.#treeId = tree.readUInt32LE(36)
    if ((tree.readUInt32LE(68) & 0x8) !== 0) {
      throw new SmbTransportError('ENOTSUP', 'the SMB share requires encryption, which this SMB client cannot do (SMB 2.1 at most)')
    }
  }

  // Transport ----------------------------------------------------------------------

  /** Sends a message built by the library's encoder; resolves with the reply frame, whatever its status. */
  #request(command: number, name: string, request: Record<string, unknown>): Promise<Buffer> {
    return this.#send(command, name, 1, (id) => {
      const msg = new this.#lib.SMB2Message({
        headers: { Command: name, SessionId: this.#sessionId, TreeId: this.#treeId, ProcessId: this.#processId },
        request,
      })
      msg.isMessageIdSetted = true
      msg.headers.MessageId = id
      return [msg.getBuffer(this as unknown as { messageId: number })]
    })
  }

  /** Sends a hand-encoded body (READ, WRITE: no copies of the data); `payload` is the bytes read or written, which set its credit charge. */
  #raw(command: number, name: string, body: Buffer, data: Uint8Array | undefined, payload: number): Promise<Buffer> {
    const charge = this.#multiCredit ? Math.max(1, Math.ceil(payload / IO_BLOCK)) : 1
    return this.#send(command, name, charge, (id) => {
      const header = Buffer.alloc(64)
      header.writeUInt32BE(0xfe534d42, 0)
      header.writeUInt16LE(64, 4)
      if (this.#multiCredit) header.writeUInt16LE(charge, 6) // CreditCharge
      header.writeUInt16LE(command, 12)
      header.writeUInt16LE(Math.max(CREDIT_REQUEST, charge), 14)
      header.writeBigUInt64LE(BigInt(id), 24)
      this.#processId.copy(header, 32)
      header.writeUInt32LE(this.#treeId, 36)
      this.#sessionId.copy(header, 40)
      return data === undefined ? [header, body] : [header, body, data]
    })
  }

  #send(command: number, name: string, charge: number, build: (id: number) => Uint8Array[]): Promise<Buffer> {
    if (this.#dead) return Promise.reject(this.#dead)
    return new Promise<Buffer>((resolve, reject) => {
      // Bounded while it waits for credits too (as long as a request the server answered
      // "pending" may take): a server that grants none ends the session.
      let waiting: NodeJS.Timeout | undefined
      let sent = false
      const send = (id: number): void => {
        sent = true
        clearTimeout(waiting)
        let parts: Uint8Array[]
        try {
          parts = build(id)
        } catch (err) {
          reject(new SmbTransportError('EIO', `could not encode the SMB ${name} request`, err))
          return
        }
        const len = parts.reduce((n, p) => n + p.byteLength, 0)
        const nb = Buffer.alloc(4)
        nb.writeUInt32BE(len, 0) // NetBIOS session message: type 0, 24-bit length
        const timer = setTimeout(() => this.kill(new SmbTransportError('ETIMEDOUT', `the SMB server did not answer ${name} within ${this.#timeoutMs} ms`)), this.#timeoutMs)
        this.#pending.set(id, { command, resolve, reject, timer })
        this.#socket.cork()
        this.#socket.write(nb)
        for (const p of parts) this.#socket.write(p)
        this.#socket.uncork()
      }
      const fail = (err: Error): void => {
        clearTimeout(waiting)
        reject(err)
      }
      this.#enqueue({ charge, send, reject: fail })
      if (!sent) waiting = setTimeout(() => this.kill(new SmbTransportError('ETIMEDOUT', `the SMB server granted no credits for ${name} within ${4 * this.#timeoutMs} ms`)), 4 * this.#timeoutMs)
    })
  }

  /**
   * Message ids are consumed in order, one per credit: a request charged n credits
   * takes n consecutive ids (MS-SMB2 3.2.4.1.5) and waits, in order, until n are granted.
   */
  #enqueue(q: Queued): void {
    this.#queue.push(q)
    this.#pump()
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#credits >= this.#queue[0]!.charge && !this.#dead) {
      const q = this.#queue.shift()!
      this.#credits -= q.charge
      const id = this.#nextId
      this.#nextId += q.charge
      q.send(id)
    }
  }

  #onData(chunk: Buffer): void {
    // Frames after a reply that killed the session are not dispatched: its callers have their error.
    this.#frames.push(chunk, (frame) => {
      if (!this.#dead) this.#dispatch(frame)
    })
  }

  #dispatch(frame: Buffer): void {
    if (frame.length < 64 || frame.readUInt32BE(0) !== 0xfe534d42) throw new Error('not an SMB2 reply')
    this.#credits += frame.readUInt16LE(14)
    const idLow = frame.readUInt32LE(24)
    const idHigh = frame.readUInt32LE(28)
    const p = idHigh === 0 ? this.#pending.get(idLow) : undefined
    if (p !== undefined) {
      const status = frame.readUInt32LE(8)
      const async = (frame.readUInt32LE(16) & 0x2) !== 0
      if (status === STATUS.PENDING && async) {
        // An interim reply: the real one follows under the same message id. Samba sends
        // these for its asynchronous I/O; the server is alive, so the clock restarts.
        clearTimeout(p.timer)
        p.timer = setTimeout(() => this.kill(new SmbTransportError('ETIMEDOUT', `the SMB server did not complete a request within ${4 * this.#timeoutMs} ms`)), 4 * this.#timeoutMs)
      } else {
        this.#pending.delete(idLow)
        clearTimeout(p.timer)
        p.resolve(frame)
      }
    }
    // Anything else (an oplock break notice, a reply to nothing) is ignored.
    this.#pump()
  }
}

/**
 * ACCESS_DENIED while logging in: the user may not use the share, or the server wants
 * encryption (`smb encrypt = required`), which SMB 2.x cannot give. Said as such.
 */
function refused(frame: Buffer): void {
  if (frame.readUInt32LE(8) !== STATUS.ACCESS_DENIED) return
  throw new FsError('EACCES', 'the SMB server refused access to the share: the user may not use it, or the share requires encryption (smb encrypt = required), which this SMB client cannot do')
}

/** Throws the reply's status unless it is success. */
function ok(frame: Buffer, name: string): void {
  const status = frame.readUInt32LE(8)
  if (status !== STATUS.SUCCESS) throw new NtStatusError(status, name)
}

function securityBuffer(frame: Buffer): Buffer {
  const off = frame.readUInt16LE(68)
  const len = frame.readUInt16LE(70)
  if (off + len > frame.length) throw new SmbTransportError('EIO', 'the SMB server sent a truncated SESSION_SETUP reply')
  return Buffer.from(frame.subarray(off, off + len))
}

/** FILE_ID_BOTH_DIR_INFORMATION records (MS-FSCC 2.4.17), without `.` and `..`. */
function parseDirectory(buf: Buffer): DirEntry[] {
  const out: DirEntry[] = []
  let off = 0
  for (;;) {
    if (off + 104 > buf.length) break
    const next = buf.readUInt32LE(off)
    const nameLen = buf.readUInt32LE(off + 60)
    const name = buf.toString('ucs2', off + 104, Math.min(buf.length, off + 104 + nameLen))
    const isDir = (buf.readUInt32LE(off + 56) & ATTR_DIRECTORY) !== 0
    if (name !== '.' && name !== '..') {
      out.push({ name, isDir, size: isDir ? 0 : Number(buf.readBigUInt64LE(off + 40)), mtimeMs: fromFiletime(buf.readBigUInt64LE(off + 24)) })
    }
    if (next === 0) break
    off += next
  }
  return out
}

