/**
 * @module gateways/sftp/wire/codec
 * SFTP version 3 (draft-ietf-secsh-filexfer-02) on the wire: packet types, status codes,
 * open flags, the reading of a request's fields (every length checked against the
 * packet: a field running past it is a `Malformed` packet) and the writing of answers,
 * each answer one buffer.
 */
import { isUtf8 } from 'node:buffer'

export const PACKET = {
  INIT: 1,
  VERSION: 2,
  OPEN: 3,
  CLOSE: 4,
  READ: 5,
  WRITE: 6,
  LSTAT: 7,
  FSTAT: 8,
  SETSTAT: 9,
  FSETSTAT: 10,
  OPENDIR: 11,
  READDIR: 12,
  REMOVE: 13,
  MKDIR: 14,
  RMDIR: 15,
  REALPATH: 16,
  STAT: 17,
  RENAME: 18,
  READLINK: 19,
  SYMLINK: 20,
  STATUS: 101,
  HANDLE: 102,
  DATA: 103,
  NAME: 104,
  ATTRS: 105,
  EXTENDED: 200,
  EXTENDED_REPLY: 201,
} as const

/** Status codes: the one table, core/sftp-status.ts (the SFTP driver reads the same codes). */
export { SFTP_STATUS as STATUS } from '../../../core/sftp-status.js'

/** OPEN's pflags. */
export const OPEN_MODE = { READ: 0x01, WRITE: 0x02, APPEND: 0x04, CREAT: 0x08, TRUNC: 0x10, EXCL: 0x20 } as const

const ATTR = { SIZE: 0x1, UIDGID: 0x2, PERMISSIONS: 0x4, ACMODTIME: 0x8, EXTENDED: 0x80000000 } as const

/** SFTP v3 file attributes: each field only when present. Times are seconds. */
export interface Attrs {
  readonly size?: number
  readonly uid?: number
  readonly gid?: number
  readonly mode?: number
  readonly atime?: number
  readonly mtime?: number
}

/** A packet that does not parse: the session cannot go on (its requests' ids are unknown). */
export class Malformed extends Error {
  override readonly name = 'Malformed'
}

const TWO_32 = 2 ** 32
/** Marks a decoded `string` whose bytes were not UTF-8 (a lone low surrogate: never well-formed). */
const NOT_UTF8 = '\uDCFF'

/** Reads one packet's fields in order. */
export class Fields {
  private p = 0

  constructor(private readonly b: Buffer) {}

  private need(n: number): void {
    if (this.p + n > this.b.length) throw new Malformed('a field runs past the end of the packet')
  }

  get rest(): Buffer {
    return this.b.subarray(this.p)
  }

  u8(): number {
    this.need(1)
    return this.b[this.p++]!
  }

  u32(): number {
    this.need(4)
    const v = this.b.readUInt32BE(this.p)
    this.p += 4
    return v
  }

  /** An offset or length: beyond 2^53 no file goes, and no number holds it exactly. */
  u64(): number {
    const hi = this.u32()
    const lo = this.u32()
    if (hi >= 2 ** 21) throw new Malformed('a 64-bit number beyond 2^53')
    return hi * TWO_32 + lo
  }

  /** A `string` as bytes (a view into the packet, no copy). */
  bytes(): Buffer {
    const n = this.u32()
    this.need(n)
    const v = this.b.subarray(this.p, this.p + n)
    this.p += n
    return v
  }

  /**
   * A `string` as text. Bytes that are not UTF-8 are not replaced by U+FFFD (two names
   * would become one): the text then ends with a lone surrogate, which no valid name
   * holds, so the path rule (core/paths.ts) refuses it as not valid UTF-8.
   */
  string(): string {
    const b = this.bytes()
    const text = b.toString('utf8')
    return isUtf8(b) ? text : `${text}${NOT_UTF8}`
  }

  attrs(): Attrs {
    const flags = this.u32()
    const a: { -readonly [K in keyof Attrs]: Attrs[K] } = {}
    if (flags & ATTR.SIZE) a.size = this.u64()
    if (flags & ATTR.UIDGID) {
      a.uid = this.u32()
      a.gid = this.u32()
    }
    if (flags & ATTR.PERMISSIONS) a.mode = this.u32()
    if (flags & ATTR.ACMODTIME) {
      a.atime = this.u32()
      a.mtime = this.u32()
    }
    if (flags & ATTR.EXTENDED) {
      // Vendor attributes: read past, not applied.
      for (let n = this.u32(); n > 0; n--) {
        this.bytes()
        this.bytes()
      }
    }
    return a
  }
}

/** One answer being written: `size` bytes reserved up front, then the fields in order. */
export class Out {
  readonly buf: Buffer
  private p = 4

  /** `size`: everything after the length field. */
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(4 + size)
    this.buf.writeUInt32BE(size, 0)
  }

  u8(v: number): this {
    this.buf[this.p++] = v
    return this
  }

  u32(v: number): this {
    this.buf.writeUInt32BE(v >>> 0, this.p)
    this.p += 4
    return this
  }

  u64(v: number): this {
    this.u32(Math.floor(v / TWO_32))
    return this.u32(v % TWO_32)
  }

  bytes(v: Uint8Array): this {
    this.u32(v.byteLength)
    this.buf.set(v, this.p)
    this.p += v.byteLength
    return this
  }

  /** Bytes as they are, without a length. */
  raw(v: Uint8Array): this {
    this.buf.set(v, this.p)
    this.p += v.byteLength
    return this
  }

  string(v: string): this {
    const n = this.buf.write(v, this.p + 4, 'utf8')
    this.u32(n)
    this.p += n
    return this
  }

  attrs(a: Attrs): this {
    let flags = 0
    if (a.size !== undefined) flags |= ATTR.SIZE
    if (a.uid !== undefined && a.gid !== undefined) flags |= ATTR.UIDGID
    if (a.mode !== undefined) flags |= ATTR.PERMISSIONS
    if (a.atime !== undefined && a.mtime !== undefined) flags |= ATTR.ACMODTIME
    this.u32(flags)
    if (flags & ATTR.SIZE) this.u64(a.size!)
    if (flags & ATTR.UIDGID) this.u32(a.uid!).u32(a.gid!)
    if (flags & ATTR.PERMISSIONS) this.u32(a.mode!)
    if (flags & ATTR.ACMODTIME) this.u32(a.atime!).u32(a.mtime!)
    return this
  }

  /** Checks that exactly the reserved size was written. */
  done(): Buffer {
    if (this.p !== this.buf.length) throw new Error(`sftp packet size mismatch: ${this.p} of ${this.buf.length}`)
    return this.buf
  }
}

/** Sizes, for `Out`'s reservation. */
export const sizeOf = {
  string: (v: string): number => 4 + Buffer.byteLength(v, 'utf8'),
  bytes: (v: Uint8Array): number => 4 + v.byteLength,
  attrs: (a: Attrs): number =>
    4 +
    (a.size !== undefined ? 8 : 0) +
    (a.uid !== undefined && a.gid !== undefined ? 8 : 0) +
    (a.mode !== undefined ? 4 : 0) +
    (a.atime !== undefined && a.mtime !== undefined ? 8 : 0),
}
