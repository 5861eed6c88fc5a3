/**
 * @module workers/zip-format
 * The zip records filegate writes, and nothing else: a small writer of the format
 * (PKWARE APPNOTE.TXT 6.3.x; section numbers below), beside workers/zip.ts, which
 * decides what goes in. It holds no bytes of file data: it produces the records
 * (local headers, data descriptors, the central directory, the end records) as
 * Buffers and counts the data bytes the caller writes between them, so that every
 * offset is known.
 *
 * Why our own, not zip-stream: its public API cannot write an entry name as given
 * (it drops a leading `word:` and rewrites `\`), an Info-ZIP "UT" time, a zip64 local
 * header for an entry known to be huge, nor take a CRC or deflated bytes computed
 * elsewhere (native zlib.crc32, deflate on libuv's threads, several entries at once).
 * Filegate used to reach those through compress-commons' private methods, which a
 * version bump could break silently; this module replaces that.
 *
 * What the records hold (all integers little-endian):
 * - Local file header (4.3.7), 30 bytes + name + extra. Two forms:
 *   - known: the entry's data was at hand before its header (small files, folders):
 *     CRC and both sizes in the header, no data descriptor;
 *   - streamed: general purpose bit 3 set, CRC and sizes 0, and a data descriptor
 *     (4.3.9) after the data: signature, CRC, then 4-byte sizes, or 8-byte sizes
 *     for a zip64 entry. An entry that stat says is 4 GiB or more is written in the
 *     form Info-ZIP's zip uses for a stream: version 4.5, sizes 0xFFFFFFFF, and a
 *     zip64 extended information field (4.5.3) with both sizes zero. Streaming
 *     readers need that announcement to know the descriptor's sizes are 8 bytes
 *     (4.3.9.2); an entry that crosses 4 GiB without it (it grew while read) still
 *     gets the 8-byte descriptor and the central zip64 record, which central-directory
 *     readers follow.
 * - Extra fields: zip64 first when present, then "UT" (0x5455, Info-ZIP extended
 *   timestamp) with the modification time in whole seconds, UTC; the DOS time/date
 *   fields (4.4.6) hold the same time to 2 seconds, UTC, clamped to 1980..2107.
 * - Names: UTF-8, general purpose bit 11 set when not plain ASCII (appendix D).
 * - Central directory header (4.3.12): made by Unix (3) so that the external
 *   attributes carry the mode (0644 files, 0755 folders, plus the DOS
 *   archive/directory bit); a zip64 field with size, compressed size and offset
 *   (all three, 0xFFFFFFFF in the fixed fields) when any of them reaches 0xFFFFFFFF
 *   or the local header announced zip64.
 * - End records (4.3.14-4.3.16): the zip64 end record and its locator when the
 *   entry count reaches 0xFFFF or the central directory's offset or size reaches
 *   0xFFFFFFFF; then the classic end record, whose fields say "see zip64"
 *   (0xFFFF / 0xFFFFFFFF) in that case. Limits are taken with >= (a field holding
 *   exactly the marker value with no zip64 record behind it is ambiguous), as Go's
 *   archive/zip does.
 */

export const STORE = 0
export const DEFLATE = 8
export type Method = typeof STORE | typeof DEFLATE

const SIG_LOCAL = 0x04034b50
const SIG_DESCRIPTOR = 0x08074b50
const SIG_CENTRAL = 0x02014b50
const SIG_ZIP64_END = 0x06064b50
const SIG_ZIP64_LOCATOR = 0x07064b50
const SIG_END = 0x06054b50
const MAGIC32 = 0xffff_ffff
const MAGIC16 = 0xffff
const VERSION = 20
const VERSION_ZIP64 = 45
/** Version made by: Unix (3), spec 6.3. */
const MADE_BY = (3 << 8) | 63
const FLAG_DESCRIPTOR = 0x0008
const FLAG_UTF8 = 0x0800
const ATTR_FILE = ((0o100644 << 16) | 0x20) >>> 0
const ATTR_DIR = ((0o040755 << 16) | 0x10) >>> 0

/** Entries written in one central-directory chunk. */
const CENTRAL_BATCH = 4096

export interface EntryInfo {
  /** The name as stored (folders end with `/`). */
  readonly name: string
  readonly mtimeMs: number
  readonly method: Method
  readonly dir?: boolean
}

/** What the central directory needs of an entry once written. */
interface Written {
  readonly name: Buffer
  readonly flags: number
  readonly method: Method
  readonly dos: number
  readonly ut: Buffer
  readonly dir: boolean
  readonly offset: number
  readonly zip64Local: boolean
  crc: number
  size: number
  csize: number
}

/** An entry whose data is being streamed: finish it with `ZipWriter.descriptor`. */
export interface OpenEntry {
  readonly written: Written
}

/** DOS date (high 16 bits) and time (low 16 bits), UTC, 2-second steps. */
export function dosDateTime(ms: number): number {
  const d = new Date(ms)
  const year = d.getUTCFullYear()
  if (!(year >= 1980)) return (1 << 21) | (1 << 16) // 1980-01-01 00:00 (NaN too)
  if (year > 2107) return ((127 << 25) | (12 << 21) | (31 << 16) | (23 << 11) | (59 << 5) | 29) >>> 0
  return (((year - 1980) << 25) | ((d.getUTCMonth() + 1) << 21) | (d.getUTCDate() << 16) | (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | (d.getUTCSeconds() >> 1)) >>> 0
}

/** Info-ZIP "UT" extra field, local/central form with the modification time only; empty outside signed 32-bit seconds. */
export function universalTime(mtimeMs: number): Buffer {
  const s = Math.floor(mtimeMs / 1000)
  if (!(s >= -0x8000_0000 && s <= 0x7fff_ffff)) return Buffer.alloc(0)
  const b = Buffer.allocUnsafe(9)
  b.writeUInt16LE(0x5455, 0)
  b.writeUInt16LE(5, 2)
  b.writeUInt8(1, 4) // flags: mtime present
  b.writeInt32LE(s, 5)
  return b
}

/** zip64 field of a streamed local header: both sizes zero (they follow in the descriptor). */
const ZIP64_LOCAL = (() => {
  const b = Buffer.alloc(20)
  b.writeUInt16LE(0x0001, 0)
  b.writeUInt16LE(16, 2)
  return b
})()

const isAscii = (s: string): boolean => !/[^\x00-\x7f]/.test(s)

/**
 * Produces the records of one archive, in order. The caller writes each returned
 * Buffer to the output, and reports the data bytes it writes with `data(n)`.
 */
export class ZipWriter {
  #offset = 0
  readonly #entries: Written[] = []

  /** Bytes of the archive so far. */
  get offset(): number {
    return this.#offset
  }

  /** Data bytes (an entry's compressed data) written by the caller. */
  data(n: number): void {
    this.#offset += n
  }

  /**
   * The local header of an entry whose data is known: CRC and sizes in the header,
   * no descriptor. The caller writes `csize` data bytes after it (none for a folder).
   */
  known(e: EntryInfo, crc: number, size: number, csize: number): Buffer {
    const w = this.#begin(e, false, false)
    w.crc = crc
    w.size = size
    w.csize = csize
    return this.#local(w, crc, size, csize, Buffer.alloc(0))
  }

  /**
   * The local header of a streamed entry (data descriptor follows the data).
   * `zip64`: announce zip64 (the entry is known to reach 4 GiB).
   */
  open(e: EntryInfo, zip64: boolean): { header: Buffer; entry: OpenEntry } {
    const w = this.#begin(e, true, zip64)
    const header = zip64 ? this.#local(w, 0, MAGIC32, MAGIC32, ZIP64_LOCAL) : this.#local(w, 0, 0, 0, Buffer.alloc(0))
    return { header, entry: { written: w } }
  }

  /** The data descriptor closing a streamed entry, once its data is written. */
  descriptor(entry: OpenEntry, crc: number, size: number, csize: number): Buffer {
    const w = entry.written
    w.crc = crc
    w.size = size
    w.csize = csize
    const long = w.zip64Local || size >= MAGIC32 || csize >= MAGIC32
    const b = Buffer.allocUnsafe(long ? 24 : 16)
    b.writeUInt32LE(SIG_DESCRIPTOR, 0)
    b.writeUInt32LE(crc >>> 0, 4)
    if (long) {
      b.writeBigUInt64LE(BigInt(csize), 8)
      b.writeBigUInt64LE(BigInt(size), 16)
    } else {
      b.writeUInt32LE(csize, 8)
      b.writeUInt32LE(size, 12)
    }
    this.#offset += b.length
    return b
  }

  /** The central directory and end records, in a few Buffers; the archive is complete after them. */
  *finish(): Generator<Buffer> {
    const start = this.#offset
    for (let i = 0; i < this.#entries.length; i += CENTRAL_BATCH) {
      const batch = this.#entries.slice(i, i + CENTRAL_BATCH).map((w) => central(w))
      const b = Buffer.concat(batch)
      this.#offset += b.length
      yield b
    }
    const count = this.#entries.length
    const size = this.#offset - start
    const zip64 = count >= MAGIC16 || start >= MAGIC32 || size >= MAGIC32
    const parts: Buffer[] = []
    if (zip64) {
      const rec = Buffer.alloc(56)
      rec.writeUInt32LE(SIG_ZIP64_END, 0)
      rec.writeBigUInt64LE(44n, 4) // size of the rest of this record
      rec.writeUInt16LE(MADE_BY, 12)
      rec.writeUInt16LE(VERSION_ZIP64, 14)
      rec.writeBigUInt64LE(BigInt(count), 24)
      rec.writeBigUInt64LE(BigInt(count), 32)
      rec.writeBigUInt64LE(BigInt(size), 40)
      rec.writeBigUInt64LE(BigInt(start), 48)
      const loc = Buffer.alloc(20)
      loc.writeUInt32LE(SIG_ZIP64_LOCATOR, 0)
      loc.writeBigUInt64LE(BigInt(this.#offset), 8)
      loc.writeUInt32LE(1, 16) // total disks
      parts.push(rec, loc)
    }
    const end = Buffer.alloc(22)
    end.writeUInt32LE(SIG_END, 0)
    end.writeUInt16LE(zip64 ? MAGIC16 : count, 8)
    end.writeUInt16LE(zip64 ? MAGIC16 : count, 10)
    end.writeUInt32LE(zip64 ? MAGIC32 : size, 12)
    end.writeUInt32LE(zip64 ? MAGIC32 : start, 16)
    parts.push(end)
    const tail = Buffer.concat(parts)
    this.#offset += tail.length
    yield tail
  }

  #begin(e: EntryInfo, streamed: boolean, zip64Local: boolean): Written {
    const w: Written = {
      name: Buffer.from(e.name, 'utf8'),
      flags: (streamed ? FLAG_DESCRIPTOR : 0) | (isAscii(e.name) ? 0 : FLAG_UTF8),
      method: e.method,
      dos: dosDateTime(e.mtimeMs),
      ut: universalTime(e.mtimeMs),
      dir: e.dir === true,
      offset: this.#offset,
      zip64Local,
      crc: 0,
      size: 0,
      csize: 0,
    }
    this.#entries.push(w)
    return w
  }

  #local(w: Written, crc: number, size: number, csize: number, zip64: Buffer): Buffer {
    const extraLen = zip64.length + w.ut.length
    const b = Buffer.allocUnsafe(30 + w.name.length + extraLen)
    b.writeUInt32LE(SIG_LOCAL, 0)
    b.writeUInt16LE(w.zip64Local ? VERSION_ZIP64 : VERSION, 4)
    b.writeUInt16LE(w.flags, 6)
    b.writeUInt16LE(w.method, 8)
    b.writeUInt32LE(w.dos, 10)
    b.writeUInt32LE(crc >>> 0, 14)
    b.writeUInt32LE(csize, 18)
    b.writeUInt32LE(size, 22)
    b.writeUInt16LE(w.name.length, 26)
    b.writeUInt16LE(extraLen, 28)
    w.name.copy(b, 30)
    zip64.copy(b, 30 + w.name.length)
    w.ut.copy(b, 30 + w.name.length + zip64.length)
    this.#offset += b.length
    return b
  }
}

/** One central directory header (4.3.12). */
function central(w: Written): Buffer {
  const zip64 = w.zip64Local || w.size >= MAGIC32 || w.csize >= MAGIC32 || w.offset >= MAGIC32
  const extraLen = (zip64 ? 28 : 0) + w.ut.length
  const b = Buffer.allocUnsafe(46 + w.name.length + extraLen)
  b.writeUInt32LE(SIG_CENTRAL, 0)
  b.writeUInt16LE(MADE_BY, 4)
  b.writeUInt16LE(zip64 ? VERSION_ZIP64 : VERSION, 6)
  b.writeUInt16LE(w.flags, 8)
  b.writeUInt16LE(w.method, 10)
  b.writeUInt32LE(w.dos, 12)
  b.writeUInt32LE(w.crc >>> 0, 16)
  b.writeUInt32LE(zip64 ? MAGIC32 : w.csize, 20)
  b.writeUInt32LE(zip64 ? MAGIC32 : w.size, 24)
  b.writeUInt16LE(w.name.length, 28)
  b.writeUInt16LE(extraLen, 30)
  b.writeUInt16LE(0, 32) // comment length
  b.writeUInt16LE(0, 34) // disk number start
  b.writeUInt16LE(0, 36) // internal attributes
  b.writeUInt32LE(w.dir ? ATTR_DIR : ATTR_FILE, 38)
  b.writeUInt32LE(zip64 ? MAGIC32 : w.offset, 42)
  w.name.copy(b, 46)
  let at = 46 + w.name.length
  if (zip64) {
    b.writeUInt16LE(0x0001, at)
    b.writeUInt16LE(24, at + 2)
    b.writeBigUInt64LE(BigInt(w.size), at + 4)
    b.writeBigUInt64LE(BigInt(w.csize), at + 12)
    b.writeBigUInt64LE(BigInt(w.offset), at + 20)
    at += 28
  }
  w.ut.copy(b, at)
  return b
}
