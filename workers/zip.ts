/**
 * @module workers/zip
 * Zip archives of storage paths, streamed as they are built: the worker side of
 * GET /api/files/zip (CONTRACT.md section 3).
 *
 * Shape of an archive:
 * - Each requested path contributes its own name and, for a directory, everything
 *   below it: entry names are relative to the path's parent (`/docs` gives `docs/`,
 *   `docs/a.txt`...; `/docs/a.txt` gives `a.txt`). Zipping `/` puts its children at
 *   the top. Every directory gets an entry (`name/`, as `zip -r` does), so empty ones
 *   survive and directory times are kept.
 * - Order is deterministic: the requested paths in request order, each directory
 *   walked depth-first with its children sorted by name (UTF-16 code units). Only one
 *   directory listing per level of the current branch is held in memory (a listing
 *   must be complete before it can be sorted), never the whole tree.
 * - Times: the DOS date/time field (UTC, 2-second steps, as zip-stream writes it) plus
 *   an Info-ZIP "UT" extra field with the exact second, which unzip, 7-Zip, yauzl and
 *   Go read. A backend that does not know a time gets the archive's start time.
 * - Compression: `store` stores everything; `auto` stores formats that are already
 *   compressed (by extension, list below, or, for a file over 1 MiB, when its first
 *   128 KiB barely deflate: random or compressed data under any name) and deflates the rest at level 1, the
 *   fastest: deflate is what limits a zip download (about 50 MB/s per stream on
 *   incompressible data, 70-140 MB/s on text, against 500+ MB/s stored, on the 2-core
 *   test machine), and higher levels cost several times the CPU for a few percent.
 * - Duplicate top-level names (`/a/x` and `/b/x`) are refused with EINVAL before any
 *   byte: renaming one of them silently would hand the user an archive that does not
 *   match what they selected. A path given twice is zipped once. `/` is refused when
 *   combined with other paths, whose entries would clash with its children.
 *
 * Streaming and failure: `openZip` stats every path first, so a missing one rejects
 * (ENOENT) before any byte and the HTTP layer can still answer with JSON. After that,
 * `body` is lazy: nothing is listed or read until it is iterated. Any error while
 * walking or reading (a file deleted meanwhile, a backend failure) makes `body` throw
 * that error, and the archive is never completed: a truncated download must look
 * broken, not like a smaller archive. Stopping early (`return()` on the iterator) or
 * aborting `ctx.signal` stops the walk and closes the driver's read iterator before
 * `return()` resolves. Backpressure runs end to end: the driver is read only as fast
 * as `body` is consumed (a few MiB buffered at most).
 *
 * zip64 (compress-commons 7.0.x, under zip-stream, handles most of it; the gaps and
 * what this module does about them):
 * - Entries of unknown length are streamed with a data descriptor. compress-commons
 *   decides zip64 per entry only after the data, so a >4 GiB entry gets 8-byte sizes
 *   in its descriptor and a zip64 record in the central directory, but no zip64 extra
 *   field in its local header. Central-directory readers (unzip, yauzl, 7-Zip, Python)
 *   accept that. Streaming readers do not agree on how to tell a 24-byte descriptor
 *   from a 16-byte one: the spec (APPNOTE 4.3.9.2; libarchive, Python's stream-unzip)
 *   says "when the local header has a zip64 extra field", Java's ZipInputStream says
 *   "when more than 4 GiB went through". Both hold when the local header announces
 *   zip64 exactly for the entries that turn out over 4 GiB, and stat tells us which:
 *   a file of 0xFFFFFFFF bytes or more gets the local header Info-ZIP's zip writes for
 *   a stream (version 4.5, sizes 0xFFFFFFFF, a zip64 extra field with zero sizes), and
 *   a file just under 4 GiB is stored rather than deflated, so that deflate's growth
 *   on incompressible data cannot push its compressed size over the line. Only a file
 *   that crosses 4 GiB while being read still gets the descriptor-only form.
 * - compress-commons switches to zip64 only *above* 0xFFFFFFFF (an entry of exactly
 *   that size, a local header at exactly that offset) and above 65,535 entries. A
 *   field holding exactly the marker value with no zip64 record behind it is corrupt,
 *   and exactly 65,535 entries is ambiguous; we switch at >= (as Go's archive/zip does).
 *
 * Entry names: zip-stream "sanitises" names by dropping any leading `word:` (meant for
 * drive letters): a top-level `http:notes.txt` became `notes.txt`, and a file named
 * `x:` at the top of a zipped root failed the whole archive mid-stream. It also turns
 * `\` into `/` and only strips `../` at the very start, so a file named `..\..\x`
 * inside a folder became `docs/../../x`. Our names are built from listed names (never
 * `.`, `..` or containing `/`) and written as they are, with two exceptions that
 * extractors on Windows would read as a path: a `\` becomes `_`, and a leading drive
 * form `c:` becomes `c_` (yauzl refuses such an archive outright as "absolute path").
 * Either could make the name equal a sibling's; such an archive then holds two
 * entries of one name, which readers handle (unzip asks), rather than failing.
 */
/// <reference path="./zip-stream.d.ts" />
import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import { deflateRawSync } from 'node:zlib'
import ZipStream, { type EntryData, type ZipArchiveEntry } from 'zip-stream'
import type { Driver, Entry, OpContext } from '../core/driver.js'
import { FsError } from '../core/errors.js'
import type { ZipCompression } from '../core/messages.js'
import { baseName, isCanonical } from '../core/paths.js'

export interface ZipArchive {
  /** Number of top-level items (the distinct requested paths); the archive's own entry count is known only at its end. */
  readonly entries: number
  /** The archive's bytes; iterate once. Throws the first error met; never ends normally after one. */
  readonly body: AsyncIterable<Uint8Array>
}

export interface ZipOptions {
  readonly compression: ZipCompression
}

/** Output chunk size: what one transferable buffer carries to the main thread. */
export const ZIP_OUT_CHUNK = 1024 * 1024
/** Chunks at least this large that own their buffer are passed through, not copied. */
const PASS_THROUGH_MIN = 256 * 1024
/** Files up to this size are read whole first: a stored entry then gets its sizes and CRC in its local header. */
const SMALL_FILE = 1024 * 1024
/** From this stat size on, an entry is written in zip64 form from its local header on. */
const ZIP64_FROM = 0xffff_ffff
/**
 * Files this close below ZIP64_FROM are stored even under 'auto': deflate can grow
 * incompressible data by about 0.03% (1.3 MB at 4 GiB), which would cross 4 GiB
 * without the local header having said so.
 */
const DEFLATE_GROWTH_MARGIN = 16 * 1024 * 1024
const STAT_CONCURRENCY = 8
/** Bytes of a file's start deflated to judge whether the rest is worth deflating. */
const SAMPLE_BYTES = 128 * 1024
/** Stored when the sample deflates to more than this fraction of its size. */
const INCOMPRESSIBLE_RATIO = 0.95

/**
 * True when the file's first bytes barely deflate: already-compressed or random
 * content without a telling extension (a .bin, a .dat). Deflating it would cost about
 * 20 ms of CPU per MB for nothing; storing it runs at disk speed.
 */
function incompressible(held: readonly Buffer[]): boolean {
  const first = held[0]
  if (!first) return false
  const sample = first.byteLength >= SAMPLE_BYTES || held.length === 1 ? first.subarray(0, SAMPLE_BYTES) : Buffer.concat(held).subarray(0, SAMPLE_BYTES)
  if (sample.byteLength < 4096) return false
  return deflateRawSync(sample, { level: DEFLATE_LEVEL }).byteLength > sample.byteLength * INCOMPRESSIBLE_RATIO
}
const DEFLATE_LEVEL = 1

const MAGIC32 = 0xffff_ffff
const MAGIC16 = 0xffff
const SIG_LFH = 0x0403_4b50
const MIN_VERSION_ZIP64 = 45

/** Already-compressed formats, by lower-case extension: deflating them again costs CPU and saves nothing. */
export const STORED_EXTENSIONS: ReadonlySet<string> = new Set([
  // images
  'jpg', 'jpeg', 'jfif', 'png', 'apng', 'gif', 'webp', 'avif', 'heic', 'heif', 'jxl', 'jp2',
  // audio, video
  'mp3', 'mp4', 'm4a', 'm4v', 'm4b', 'aac', 'mov', 'mkv', 'mka', 'webm', 'avi', 'wmv', 'wma', 'flv',
  '3gp', 'ogg', 'oga', 'ogv', 'opus', 'flac',
  // archives and compressed streams
  'zip', 'gz', 'tgz', 'bz2', 'tbz', 'tbz2', 'xz', 'txz', 'zst', 'tzst', 'lz', 'lz4', 'lzma', 'br', '7z', 'rar', 'cab',
  'svgz', 'deb', 'rpm', 'dmg',
  // zip containers
  'jar', 'war', 'ear', 'apk', 'aab', 'ipa', 'xpi', 'crx', 'whl', 'nupkg', 'vsix', 'epub',
  'docx', 'xlsx', 'pptx', 'docm', 'xlsm', 'pptm', 'odt', 'ods', 'odp', 'odg',
  // documents and fonts with compressed streams
  'pdf', 'woff', 'woff2',
])

/** True when an entry of this name is stored under `compression: 'auto'`. */
export function isPrecompressed(name: string): boolean {
  const base = baseName('/' + name)
  const dot = base.lastIndexOf('.')
  return dot > 0 && STORED_EXTENSIONS.has(base.slice(dot + 1).toLowerCase())
}

/**
 * Stats every path (rejecting with the driver's error, e.g. ENOENT, before any byte),
 * then returns the archive, whose bytes are produced as `body` is iterated.
 * @param paths canonical storage paths
 * @throws FsError EINVAL for no path, a non-canonical path, clashing top-level names
 */
export async function openZip(ctx: OpContext, driver: Driver, paths: readonly string[], opts: ZipOptions): Promise<ZipArchive> {
  const unique = [...new Set(paths)]
  if (unique.length === 0) throw new FsError('EINVAL', 'nothing to zip: no path given')
  for (const p of unique) {
    if (!isCanonical(p)) throw new FsError('EINVAL', `not a canonical path: ${JSON.stringify(p)}`, { path: p })
  }
  if (unique.length > 1 && unique.includes('/')) {
    throw new FsError('EINVAL', 'the root "/" cannot be zipped together with other paths: their names would clash with its entries', { path: '/' })
  }
  const seen = new Map<string, string>()
  for (const p of unique) {
    const name = baseName(p)
    const other = seen.get(name)
    if (other !== undefined) {
      throw new FsError('EINVAL', `"${other}" and "${p}" would both be "${name}" in the archive; zip them separately`, { path: p })
    }
    seen.set(name, p)
  }
  if (ctx.signal.aborted) throw new FsError('ECANCELED', 'cancelled')
  const tops = await statAll(ctx, driver, unique)
  return { entries: tops.length, body: singleUse(() => archiveBytes(ctx, driver, tops, opts.compression === 'store')) }
}

/** Stats in request order with a few in flight: a selection of hundreds of files on a remote backend. */
async function statAll(ctx: OpContext, driver: Driver, paths: readonly string[]): Promise<Entry[]> {
  const out: Entry[] = new Array<Entry>(paths.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < paths.length) {
      const i = next++
      out[i] = await driver.stat(ctx, paths[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(STAT_CONCURRENCY, paths.length) }, worker))
  return out
}

/** An iterable that can be iterated once (it owns a walk and a zip stream). */
function singleUse(make: () => AsyncGenerator<Uint8Array>): AsyncIterable<Uint8Array> {
  let used = false
  return {
    [Symbol.asyncIterator]() {
      if (used) throw new Error('a zip body can be iterated only once')
      used = true
      return make()
    },
  }
}

const cancelled = (): FsError => new FsError('ECANCELED', 'cancelled')

/**
 * The producer: a walk (`feed`) writes entries into the zip stream while this
 * generator drains it into coalesced chunks. The two meet only through the stream's
 * buffers, so the walk pauses whenever the consumer does.
 */
async function* archiveBytes(ctx: OpContext, driver: Driver, tops: readonly Entry[], storeAll: boolean): AsyncGenerator<Uint8Array> {
  if (ctx.signal.aborted) throw cancelled()
  // Aborted on every way out (failure, cancel, early return): the walk and the driver stop.
  const stop = new AbortController()
  const zs = new FilegateZipStream({ zlib: { level: DEFLATE_LEVEL }, highWaterMark: ZIP_OUT_CHUNK })
  let failure: unknown = null
  const fail = (err: unknown): void => {
    failure ??= err
    stop.abort(cancelled())
    zs.destroy(err instanceof Error ? err : new Error(String(err)))
  }
  const onAbort = (): void => fail(cancelled())
  ctx.signal.addEventListener('abort', onAbort, { once: true })
  // Failures travel through `failure` and the iterator below; this listener keeps a late
  // 'error' on an abandoned stream from becoming an uncaught exception.
  zs.on('error', () => {})
  const writer = new ArchiveWriter(zs, { signal: stop.signal, requestId: ctx.requestId }, driver, storeAll)
  const feeding = feed(writer, tops)
    .then(() => {
      if (!stop.signal.aborted) zs.finalize()
    })
    .catch(fail)
  const out = new Coalescer()
  try {
    for await (const chunk of zs as AsyncIterable<Buffer>) {
      for (const c of out.push(chunk)) {
        // A cancel or failure that happened while the consumer held the last chunk wins
        // over bytes already in hand.
        if (failure !== null) throw failure
        yield c
      }
    }
    if (failure !== null) throw failure
    const tail = out.flush()
    if (tail !== null) yield tail
  } catch (err) {
    throw failure ?? err
  } finally {
    ctx.signal.removeEventListener('abort', onAbort)
    stop.abort(cancelled())
    zs.destroy()
    // The walk settles promptly once aborted; waiting for it means the driver's read
    // iterators are closed when the consumer's return() (or the throw) completes.
    await feeding
  }
}

async function feed(w: ArchiveWriter, tops: readonly Entry[]): Promise<void> {
  for (const top of tops) {
    if (top.path === '/') await walk(w, top, '')
    else if (top.kind === 'dir') await walk(w, top, top.name + '/', true)
    else await w.file(top, top.name)
  }
}

/**
 * Depth-first; `prefix` is the directory's entry name ('' for the root, which gets no
 * entry). A linked directory met on the way is kept as an empty entry, not entered:
 * links can form cycles. One named by the caller (`top`) is entered.
 */
async function walk(w: ArchiveWriter, dir: Entry, prefix: string, top = false): Promise<void> {
  if (prefix !== '') await w.directory(dir, prefix)
  if (dir.link && !top) return
  const children = await w.listSorted(dir.path)
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!
    if (c.kind === 'dir') await walk(w, c, prefix + c.name + '/')
    else await w.file(c, prefix + c.name)
  }
}

/** Adds entries to the zip stream, one at a time, honouring its backpressure and the stop signal. */
class ArchiveWriter {
  readonly #zs: FilegateZipStream
  readonly #ctx: OpContext
  readonly #driver: Driver
  readonly #storeAll: boolean
  /** Time for entries whose backend does not know theirs. */
  readonly #now = Date.now()

  constructor(zs: FilegateZipStream, ctx: OpContext, driver: Driver, storeAll: boolean) {
    this.#zs = zs
    this.#ctx = ctx
    this.#driver = driver
    this.#storeAll = storeAll
  }

  async listSorted(dir: string): Promise<Entry[]> {
    const all: Entry[] = []
    for await (const page of this.#driver.list(this.#ctx, dir)) {
      this.#check()
      for (const e of page) all.push(e)
    }
    return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  async directory(e: Entry, name: string): Promise<void> {
    this.#check()
    const mtimeMs = e.mtimeMs ?? this.#now
    // zip-stream gets a placeholder name (see FilegateZipStream); the real one travels in `meta`.
    const data: EntryData = { name: 'd', type: 'directory', mode: 0o755, date: new Date(mtimeMs) }
    await this.#settle(this.#zs.add(null, data, { name: zipEntryName(name), mtimeMs, zip64: false }))
  }

  async file(e: Entry, name: string): Promise<void> {
    this.#check()
    const mtimeMs = e.mtimeMs ?? this.#now
    const nearLimit = e.size >= ZIP64_FROM - DEFLATE_GROWTH_MARGIN && e.size < ZIP64_FROM
    const store = this.#storeAll || nearLimit || isPrecompressed(name)
    let data: EntryData = { name: 'f', type: 'file', mode: 0o644, date: new Date(mtimeMs), store }
    const meta: EntryMeta = { name: zipEntryName(name), mtimeMs, zip64: e.size >= ZIP64_FROM }
    // The first bytes are held before the entry starts: for a large file they tell
    // whether deflate is worth its CPU. Small files are held whole (bounded by
    // SMALL_FILE); a file that turns out bigger than its stat said switches to
    // streaming with what was read.
    let held: Buffer[] = []
    let heldBytes = 0
    let sink: { readonly input: PassThrough; readonly done: Promise<void> } | null = null
    for await (const chunk of this.#driver.read(this.#ctx, e.path)) {
      this.#check()
      const buf = asBuffer(chunk)
      if (sink === null) {
        held.push(buf)
        heldBytes += buf.byteLength
        if (heldBytes <= SMALL_FILE && e.size <= SMALL_FILE) continue
        if (!data.store && incompressible(held)) data = { ...data, store: true }
        sink = this.#open(data, meta)
        for (const h of held) await this.#write(sink.input, h)
        held = []
      } else {
        await this.#write(sink.input, buf)
      }
    }
    this.#check()
    if (sink === null) {
      // A small file is deflated without sampling first: the sample would be the whole
      // file deflated twice, and storing it instead saves little.
      await this.#settle(this.#zs.add(held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes), data, meta))
    } else {
      sink.input.end()
      await this.#settle(sink.done)
    }
  }

  /** Starts a streamed entry; its bytes go to `input`. */
  #open(data: EntryData, meta: EntryMeta): { input: PassThrough; done: Promise<void> } {
    const input = new PassThrough()
    const done = untilAborted(this.#zs.add(input, data, meta), this.#ctx.signal)
    done.catch(() => {}) // awaited later, or abandoned when the read fails: never an unhandled rejection
    return { input, done }
  }

  async #write(input: PassThrough, buf: Buffer): Promise<void> {
    if (!input.write(buf)) await once(input, 'drain', { signal: this.#ctx.signal })
  }

  /** Waits for an entry to be written, then for room in the zip stream (buffer entries ignore its backpressure). */
  async #settle(added: Promise<void>): Promise<void> {
    await untilAborted(added, this.#ctx.signal)
    if (this.#zs.writableNeedDrain) await once(this.#zs, 'drain', { signal: this.#ctx.signal })
  }

  #check(): void {
    if (this.#ctx.signal.aborted) throw this.#ctx.signal.reason
  }
}

/** The entry name for a relative storage path (see the module comment). */
export function zipEntryName(rel: string): string {
  return rel.replace(/\\/g, '_').replace(/^([A-Za-z]):/, '$1_')
}

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength)
}

/** `p`, or a rejection with the signal's reason as soon as it aborts; `p`'s own outcome is always handled. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      p.catch(() => {})
      reject(signal.reason)
      return
    }
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(err)
      },
    )
  })
}

// zip-stream with filegate's fixes ----------------------------------------------

interface EntryMeta {
  /** The entry name as written (directories end with `/`). */
  readonly name: string
  readonly mtimeMs: number
  /** Written in zip64 form from its local header on (known large from stat). */
  readonly zip64: boolean
}

interface EntryState {
  readonly meta: EntryMeta
  /** Its local header lies at or past 4 GiB: the central directory needs the zip64 record. */
  centralZip64: boolean
}

/** zip64 extended information in a local header of unknown sizes: both sizes, zero (Info-ZIP's form). */
const ZIP64_LOCAL_EXTRA = (() => {
  const b = Buffer.alloc(20)
  b.writeUInt16LE(0x0001, 0)
  b.writeUInt16LE(16, 2)
  return b
})()

/** Info-ZIP "UT" extended timestamp: the modification time in whole seconds (signed 32-bit, UTC). */
function universalTime(mtimeMs: number): Buffer {
  const s = Math.floor(mtimeMs / 1000)
  if (s < -0x8000_0000 || s > 0x7fff_ffff) return Buffer.alloc(0)
  const b = Buffer.alloc(9)
  b.writeUInt16LE(0x5455, 0)
  b.writeUInt16LE(5, 2)
  b.writeUInt8(1, 4) // flags: mtime present
  b.writeInt32LE(s, 5)
  return b
}

/**
 * ZipStream with the fixes listed in the module comment. Everything here relies on
 * compress-commons 7.0.x internals (declared in zip-stream.d.ts); the tests cover each.
 */
class FilegateZipStream extends ZipStream {
  /** The real name and traits of the entry being added; `entry()` reaches `_normalizeEntry` synchronously. */
  #next: EntryMeta | null = null
  readonly #state = new WeakMap<ZipArchiveEntry, EntryState>()

  /** Adds one entry; resolves once it is fully written into the stream. */
  add(source: Buffer | PassThrough | null, data: EntryData, meta: EntryMeta): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#next = meta
      try {
        this.entry(source, data, (err) => (err ? reject(err) : resolve()))
      } catch (err) {
        reject(err)
      } finally {
        this.#next = null
      }
    })
  }

  protected override _normalizeEntry(ae: ZipArchiveEntry): void {
    super._normalizeEntry(ae)
    const meta = this.#next
    if (meta === null) return
    const st: EntryState = { meta, centralZip64: false }
    this.#state.set(ae, st)
    ae.name = meta.name
    if (Buffer.byteLength(meta.name) !== meta.name.length) ae.getGeneralPurposeBit().useUTF8ForNames(true)
    const ut = universalTime(meta.mtimeMs)
    const local = meta.zip64 ? Buffer.concat([ZIP64_LOCAL_EXTRA, ut]) : ut
    ae.getLocalFileDataExtra = () => local
    // compress-commons puts its zip64 record in the entry's extra while writing the central header.
    ae.getCentralDirectoryExtra = () => {
      const own = ae.getExtra()
      return own.length === 0 ? ut : Buffer.concat([own, ut])
    }
    // Decides the 8-byte data descriptor and the central zip64 record.
    ae.isZip64 = () => meta.zip64 || st.centralZip64 || ae.size >= MAGIC32 || ae.csize >= MAGIC32
  }

  protected override _writeLocalFileHeader(ae: ZipArchiveEntry): void {
    if (this.#state.get(ae)?.meta.zip64 !== true) {
      super._writeLocalFileHeader(ae)
      return
    }
    // What Info-ZIP's zip writes for a stream: version 4.5, data descriptor, no CRC,
    // sizes 0xFFFFFFFF pointing at a zip64 extra field whose sizes are zero; the
    // descriptor after the data has the real sizes, 8 bytes each.
    const gpb = ae.getGeneralPurposeBit()
    gpb.useDataDescriptor(true)
    ae.setVersionNeededToExtract(MIN_VERSION_ZIP64)
    const name = Buffer.from(ae.getName(), 'utf8')
    const extra = ae.getLocalFileDataExtra()
    const h = Buffer.alloc(30)
    h.writeUInt32LE(SIG_LFH, 0)
    h.writeUInt16LE(MIN_VERSION_ZIP64, 4)
    gpb.encode().copy(h, 6)
    h.writeUInt16LE(ae.getMethod(), 8)
    h.writeUInt32LE(ae.getTimeDos() >>> 0, 10)
    h.writeUInt32LE(0, 14) // CRC: in the data descriptor
    h.writeUInt32LE(MAGIC32, 18)
    h.writeUInt32LE(MAGIC32, 22)
    h.writeUInt16LE(name.length, 26)
    h.writeUInt16LE(extra.length, 28)
    ae._offsets.file = this.offset
    ae._offsets.data = this.offset + 14
    this.write(Buffer.concat([h, name, extra]))
    ae._offsets.contents = this.offset
  }

  protected override _writeCentralFileHeader(ae: ZipArchiveEntry): void {
    const st = this.#state.get(ae)
    if (st !== undefined && ae._offsets.file >= MAGIC32) st.centralZip64 = true
    super._writeCentralFileHeader(ae)
  }

  override isZip64(): boolean {
    return (
      super.isZip64() ||
      this._entries.length >= MAGIC16 ||
      this._archive.centralOffset >= MAGIC32 ||
      this._archive.centralLength >= MAGIC32
    )
  }
}

// Output coalescing ----------------------------------------------------------------

/**
 * Turns zip-stream's output (headers written a few bytes at a time, 16 KiB deflate
 * slices, whole read chunks) into chunks of up to ZIP_OUT_CHUNK that each own their
 * ArrayBuffer, so the caller can transfer them to another thread without a copy.
 * Large chunks that already own their buffer (stored file data straight from the
 * driver) are passed through untouched.
 */
class Coalescer {
  #buf: Buffer | null = null
  #len = 0

  /** The pending bytes, in a buffer of their own; null when there are none. */
  flush(): Uint8Array | null {
    if (this.#len === 0 || this.#buf === null) return null
    const out = Buffer.allocUnsafeSlow(this.#len)
    this.#buf.copy(out, 0, 0, this.#len)
    this.#len = 0
    return out
  }

  *push(chunk: Buffer): Generator<Uint8Array> {
    if (chunk.byteLength >= PASS_THROUGH_MIN && chunk.byteLength <= ZIP_OUT_CHUNK && chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength) {
      const head = this.flush()
      if (head !== null) yield head
      yield chunk
      return
    }
    let off = 0
    while (off < chunk.byteLength) {
      this.#buf ??= Buffer.allocUnsafeSlow(ZIP_OUT_CHUNK)
      const n = chunk.copy(this.#buf, this.#len, off)
      this.#len += n
      off += n
      if (this.#len === ZIP_OUT_CHUNK) {
        const full = this.#buf
        this.#buf = null // handed over: never written again
        this.#len = 0
        yield full
      }
    }
  }
}
