/**
 * @module workers/zip
 * Zip archives of storage paths, streamed as they are built: the worker side of
 * GET /api/files/zip (docs/api.md, "Files").
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
 * - Times: the DOS date/time field (UTC, 2-second steps) plus an Info-ZIP "UT"
 *   extra field with the exact second, which unzip, 7-Zip, yauzl and Go read. A backend that does not know a time gets the archive's start time.
 * - Compression: `store` stores everything; `auto` stores formats that are already
 *   compressed (by extension, list below, or, for a file over 1 MiB, when its first
 *   128 KiB barely deflate: random or compressed data under any name) and deflates
 *   the rest at level 1, the fastest: deflate is what limits a zip download (about 50 MB/s per stream on
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
 * as `body` is consumed, except for the small files prepared ahead (below: at most
 * PREFETCH_BYTES by their stat sizes), plus a few MiB in zlib and the output chunk.
 *
 * Speed (the work is CRC, deflate and, on remote backends, latency per file):
 * - CRC-32 is zlib's native `crc32`; deflate runs on libuv's thread pool (zlib's
 *   asynchronous API), except for files up to SYNC_DEFLATE_MAX, whose hop to
 *   the pool would cost more than deflating them.
 * - Small files (stat size up to SMALL_FILE) are prepared ahead: up to PREFETCH of
 *   them (PREFETCH_BYTES at most) are read, CRC'd and deflated at once, on the
 *   backend's sessions and zlib's threads, while the archive is written strictly in
 *   walk order. Their local headers carry CRC and sizes (no data descriptor).
 * - Larger files are streamed one at a time when their turn comes, deflated by a
 *   zlib stream (also on the thread pool), with a data descriptor after the data.
 *   Whether to deflate is decided from their first SAMPLE_BYTES (see `auto`).
 * A file that turns out larger than SMALL_FILE while being prepared (it grew since
 * it was listed) is dropped from the window and streamed from its start when its
 * turn comes: a read held open in the window could hold the session the file
 * before it needs.
 *
 * The records themselves (headers, zip64, times, names' UTF-8 flag) are written by
 * workers/zip-format.ts, which documents the format. Entries known from stat to be
 * 4 GiB or more announce zip64 in their local header; a file just under 4 GiB is
 * stored rather than deflated, so that deflate's growth on incompressible data cannot
 * push its compressed size over the line without the header having said so.
 *
 * Entry names: written as listed (never `.`, `..` or containing `/`), with two
 * exceptions that extractors on Windows would read as a path: a `\` becomes `_`, and
 * a leading drive form `c:` becomes `c_` (yauzl refuses such an archive outright as
 * "absolute path"). Either could make the name equal a sibling's; such an archive
 * then holds two entries of one name, which readers handle (unzip asks), rather than
 * failing. (zip-stream, used before, dropped any leading `word:` and failed on a
 * file named `x:`.)
 */
import { once } from 'node:events'
import { promisify } from 'node:util'
import { createDeflateRaw, crc32, deflateRaw, deflateRawSync } from 'node:zlib'
import type { Driver, Entry, OpContext } from '../core/driver.js'
import { FsError } from '../core/errors.js'
import type { ZipCompression } from '../core/messages.js'
import { baseName, isCanonical } from '../core/paths.js'
import { inParallel, ReadAhead } from './inflight.js'
import { ByteQueue, ownsBuffer } from './rechunk.js'
import { DEFLATE, type EntryInfo, type Method, STORE, ZipWriter } from './zip-format.js'

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
/** Files up to this size are read whole, ahead of their turn: their local header then carries sizes and CRC. */
const SMALL_FILE = 1024 * 1024
/** Small files prepared ahead of the one being written, at most... */
const PREFETCH = 32
/** ...and the bytes they may hold (by stat size). */
const PREFETCH_BYTES = 16 * 1024 * 1024
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
const DEFLATE_LEVEL = 1
/** zlib's output slices for a streamed entry (its default, 16 KiB, costs a turn of the loop each). */
const DEFLATE_CHUNK = 256 * 1024

/**
 * Up to this size a file is deflated on this thread, at once: zlib's asynchronous
 * call costs 80-140 µs per call against 15-45 µs for a 4 KiB file deflated in place
 * (measured on the 2-core test machine), and at level 1, 64 KiB take well under a
 * millisecond. Larger ones go to zlib's threads, off this thread's event loop.
 */
const SYNC_DEFLATE_MAX = 64 * 1024

const deflateAsync = promisify(deflateRaw)
const deflate = async (b: Buffer): Promise<Buffer> =>
  b.byteLength <= SYNC_DEFLATE_MAX ? deflateRawSync(b, { level: DEFLATE_LEVEL }) : deflateAsync(b, { level: DEFLATE_LEVEL })

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

/** The entry name for a relative storage path (see the module comment). */
export function zipEntryName(rel: string): string {
  return rel.replace(/\\/g, '_').replace(/^([A-Za-z]):/, '$1_')
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
  // Stats in request order with a few in flight: a selection of hundreds of files on a remote backend.
  const tops = new Array<Entry>(unique.length)
  await inParallel(STAT_CONCURRENCY, unique, async (p, i) => {
    tops[i] = await driver.stat(ctx, p)
  })
  return { entries: tops.length, body: singleUse(() => archiveBytes(ctx, driver, tops, opts.compression === 'store')) }
}

/** An iterable that can be iterated once (it owns a walk and its reads). */
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

// The walk ---------------------------------------------------------------------------

/** One entry of the archive, in archive order. */
interface Item {
  readonly entry: Entry
  /** The entry name (folders end with `/`). */
  readonly name: string
}

/** The entries of the archive in order: the requested paths, each directory depth-first, children sorted by name. */
async function* walkAll(ctx: OpContext, driver: Driver, tops: readonly Entry[]): AsyncGenerator<Item> {
  for (const top of tops) {
    if (top.path === '/') yield* walk(ctx, driver, top, '')
    else if (top.kind === 'dir') yield* walk(ctx, driver, top, top.name + '/', true)
    else yield { entry: top, name: zipEntryName(top.name) }
  }
}

/**
 * Depth-first; `prefix` is the directory's entry name ('' for the root, which gets no
 * entry). A linked directory met on the way is kept as an empty entry, not entered:
 * links can form cycles. One named by the caller (`top`) is entered.
 */
async function* walk(ctx: OpContext, driver: Driver, dir: Entry, prefix: string, top = false): AsyncGenerator<Item> {
  if (prefix !== '') yield { entry: dir, name: zipEntryName(prefix) }
  if (dir.link && !top) return
  const children: Entry[] = []
  for await (const page of driver.list(ctx, dir.path)) {
    if (ctx.signal.aborted) throw ctx.signal.reason
    for (const e of page) children.push(e)
  }
  children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const c of children) {
    if (c.kind === 'dir') yield* walk(ctx, driver, c, prefix + c.name + '/')
    else yield { entry: c, name: zipEntryName(prefix + c.name) }
  }
}

// Entries ------------------------------------------------------------------------------

/** What the archive loop writes for an item: a folder, a small file ready in memory, or a file to stream. */
type Prepared =
  | { readonly kind: 'dir'; readonly item: Item }
  | { readonly kind: 'ready'; readonly item: Item; readonly method: Method; readonly crc: number; readonly size: number; readonly data: Buffer }
  | { readonly kind: 'stream'; readonly item: Item }

/** A file read whole ahead of its turn (by its stat size). */
const isSmall = (item: Item): boolean => item.entry.kind === 'file' && item.entry.size <= SMALL_FILE

const asBuffer = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength))

/**
 * Reads a small file whole, CRCs and (unless stored) deflates it. A file that turns
 * out larger than SMALL_FILE is handed back to be streamed (its read is closed here).
 */
async function prepareSmall(ctx: OpContext, driver: Driver, item: Item, store: boolean): Promise<Prepared> {
  const parts: Buffer[] = []
  let size = 0
  for await (const chunk of driver.read(ctx, item.entry.path)) {
    if (ctx.signal.aborted) throw ctx.signal.reason
    parts.push(asBuffer(chunk))
    size += chunk.byteLength
    if (size > SMALL_FILE) return { kind: 'stream', item }
  }
  if (ctx.signal.aborted) throw ctx.signal.reason
  const raw = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)
  const crc = crc32(raw)
  // A small file is deflated without sampling first: the sample would be the whole
  // file deflated twice, and storing it instead saves little. An empty one is stored.
  if (store || size === 0) return { kind: 'ready', item, method: STORE, crc, size, data: raw }
  return { kind: 'ready', item, method: DEFLATE, crc, size, data: await deflate(raw) }
}

/** True when the sample barely deflates: already-compressed or random content without a telling extension. */
async function incompressible(sample: Buffer): Promise<boolean> {
  if (sample.byteLength < 4096) return false
  return (await deflate(sample)).byteLength > sample.byteLength * INCOMPRESSIBLE_RATIO
}

/** Whether `item` is stored whatever its content: all stored, a compressed format, or near the zip64 line. */
function storedByRule(item: Item, storeAll: boolean): boolean {
  const size = item.entry.size
  return storeAll || isPrecompressed(item.name) || (size >= ZIP64_FROM - DEFLATE_GROWTH_MARGIN && size < ZIP64_FROM)
}

/**
 * A driver read as buffers, with its first SAMPLE_BYTES (or all of it, when shorter)
 * gathered before anything is yielded, so that the method can be chosen first.
 */
async function sampled(source: AsyncIterator<Uint8Array>): Promise<{ head: Buffer[]; sample: Buffer; done: boolean }> {
  const head: Buffer[] = []
  let n = 0
  while (n < SAMPLE_BYTES) {
    const r = await source.next()
    if (r.done) return { head, sample: Buffer.concat(head, n), done: true }
    const b = asBuffer(r.value)
    head.push(b)
    n += b.byteLength
  }
  const first = head[0]!
  return { head, sample: first.byteLength >= SAMPLE_BYTES ? first.subarray(0, SAMPLE_BYTES) : Buffer.concat(head, n).subarray(0, SAMPLE_BYTES), done: false }
}

/** `head`, then the rest of `source`. */
async function* joined(head: readonly Buffer[], source: AsyncIterator<Uint8Array>, done: boolean): AsyncGenerator<Buffer> {
  yield* head
  if (done) return
  for (let r = await source.next(); !r.done; r = await source.next()) yield asBuffer(r.value)
}

/**
 * Deflates `src` on zlib's threads; the output arrives as it is produced. Stopping
 * early (return) destroys the zlib stream and waits for `src` to be closed.
 */
async function* deflateStream(src: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const z = createDeflateRaw({ level: DEFLATE_LEVEL, chunkSize: DEFLATE_CHUNK })
  const stop = new AbortController()
  const pump = (async () => {
    try {
      for await (const c of src) {
        if (stop.signal.aborted) return
        if (!z.write(c)) await once(z, 'drain', { signal: stop.signal })
      }
      z.end()
    } catch (err) {
      z.destroy(err instanceof Error ? err : new Error(String(err)))
    }
  })()
  try {
    for await (const out of z as AsyncIterable<Buffer>) yield out
  } finally {
    stop.abort()
    z.destroy()
    await pump
  }
}

// The archive ------------------------------------------------------------------------

/**
 * The archive's bytes, with the ways out: a cancel or failure that happened while the
 * consumer held the last chunk wins over bytes already in hand, and any way out
 * (failure, cancel, early return) first aborts the walk and the reads, then waits for
 * them to close.
 */
async function* archiveBytes(parent: OpContext, driver: Driver, tops: readonly Entry[], storeAll: boolean): AsyncGenerator<Uint8Array> {
  if (parent.signal.aborted) throw cancelled()
  const stop = new AbortController()
  const onAbort = (): void => stop.abort(cancelled())
  parent.signal.addEventListener('abort', onAbort, { once: true })
  const bytes = produce(stop, parent.requestId, driver, tops, storeAll)
  try {
    for (;;) {
      const r = await bytes.next()
      if (r.done) return
      if (stop.signal.aborted) throw cancelled()
      yield r.value
    }
  } catch (err) {
    throw parent.signal.aborted ? cancelled() : err
  } finally {
    parent.signal.removeEventListener('abort', onAbort)
    stop.abort(cancelled())
    await bytes.return(undefined).catch(() => {})
  }
}

/**
 * The producer: items from the walk are prepared ahead (small files) and written in
 * order; the output is coalesced into owned chunks of up to ZIP_OUT_CHUNK. Nothing
 * runs while the consumer does not pull, except the prepared-ahead window.
 */
async function* produce(stop: AbortController, requestId: string, driver: Driver, tops: readonly Entry[], storeAll: boolean): AsyncGenerator<Uint8Array> {
  const ctx: OpContext = { signal: stop.signal, requestId }
  const now = Date.now()
  const zw = new ZipWriter()
  const out = new Coalescer()
  const items = walkAll(ctx, driver, tops)
  const ahead = new ReadAhead<Prepared>()
  /** Every prepare started: awaited on the way out, so no read outlives the body. */
  const started = new Set<Promise<unknown>>()
  let aheadBytes = 0
  let walked = false
  const info = (p: Prepared, method: Method): EntryInfo => ({ name: p.item.name, mtimeMs: p.item.entry.mtimeMs ?? now, method, dir: p.kind === 'dir' })

  /** Pulls items from the walk until the window is full. */
  const fill = async (): Promise<void> => {
    while (!walked && ahead.length < PREFETCH && aheadBytes < PREFETCH_BYTES) {
      const r = await items.next()
      if (r.done) {
        walked = true
        return
      }
      const item = r.value
      if (item.entry.kind === 'dir') ahead.push(Promise.resolve({ kind: 'dir', item }))
      else if (!isSmall(item)) ahead.push(Promise.resolve({ kind: 'stream', item }))
      else {
        aheadBytes += item.entry.size
        const p = prepareSmall(ctx, driver, item, storedByRule(item, storeAll)).finally(() => started.delete(p))
        started.add(p)
        ahead.push(p)
      }
    }
  }

  /** Writes a file whose size is not known in advance: header, data (deflated or not) and descriptor. */
  async function* stream(p: Prepared): AsyncGenerator<Uint8Array> {
    const source = driver.read(ctx, p.item.entry.path)[Symbol.asyncIterator]()
    try {
      const first = await sampled(source)
      if (ctx.signal.aborted) throw ctx.signal.reason
      const store = storedByRule(p.item, storeAll) || (first.sample.byteLength > 0 && (await incompressible(first.sample)))
      const { header, entry } = zw.open(info(p, store ? STORE : DEFLATE), p.item.entry.size >= ZIP64_FROM)
      yield* out.push(header)
      let crc = 0
      let size = 0
      const raw = (async function* () {
        for await (const b of joined(first.head, source, first.done)) {
          if (ctx.signal.aborted) throw ctx.signal.reason
          crc = crc32(b, crc)
          size += b.byteLength
          yield b
        }
      })()
      let csize = 0
      for await (const b of store ? raw : deflateStream(raw)) {
        csize += b.byteLength
        zw.data(b.byteLength)
        yield* out.push(b)
      }
      if (ctx.signal.aborted) throw ctx.signal.reason
      yield* out.push(zw.descriptor(entry, crc, size, csize))
    } finally {
      await source.return?.()
    }
  }

  try {
    await fill()
    for (let next = ahead.shift(); next !== undefined; next = ahead.shift()) {
      const p = await next
      if (ctx.signal.aborted) throw ctx.signal.reason
      if (isSmall(p.item)) aheadBytes -= p.item.entry.size
      if (p.kind === 'dir') {
        yield* out.push(zw.known(info(p, STORE), 0, 0, 0))
      } else if (p.kind === 'ready') {
        yield* out.push(zw.known(info(p, p.method), p.crc, p.size, p.data.byteLength))
        zw.data(p.data.byteLength)
        yield* out.push(p.data)
      } else {
        yield* stream(p)
      }
      await fill()
    }
    for (const b of zw.finish()) yield* out.push(b)
    const tail = out.flush()
    if (tail !== null) yield tail
  } finally {
    stop.abort(cancelled()) // a no-op after a complete archive: everything has settled
    // The walk and the reads settle promptly once aborted; waiting for them means the
    // driver's read iterators are closed when the consumer's return() (or the throw) completes.
    await items.return(undefined).catch(() => {})
    await Promise.allSettled([...started])
  }
}

/**
 * Turns the archive's pieces (headers of a few dozen bytes, deflated files, 256 KiB
 * deflate slices, whole read chunks) into chunks of up to ZIP_OUT_CHUNK that each own
 * their ArrayBuffer, so the caller can transfer them to another thread without a
 * copy. Large chunks that already own their buffer (stored file data straight from
 * the driver) are passed through untouched.
 */
class Coalescer {
  readonly #q = new ByteQueue()

  /** The pending bytes, in a buffer of their own; null when there are none. */
  flush(): Uint8Array | null {
    return this.#q.size === 0 ? null : this.#q.take(this.#q.size)
  }

  *push(chunk: Buffer): Generator<Uint8Array> {
    if (chunk.byteLength >= PASS_THROUGH_MIN && chunk.byteLength <= ZIP_OUT_CHUNK && ownsBuffer(chunk)) {
      const head = this.flush()
      if (head !== null) yield head
      yield chunk
      return
    }
    this.#q.push(chunk)
    while (this.#q.size >= ZIP_OUT_CHUNK) yield this.#q.take(ZIP_OUT_CHUNK)
  }
}
