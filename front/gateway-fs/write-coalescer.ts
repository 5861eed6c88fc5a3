/**
 * @module front/gateway-fs/write-coalescer
 * A file written from offset 0 (a new or truncated file: the common `put`) is one
 * atomic upload (Channel.upload: the driver's write into a hidden temporary file,
 * renamed over the target at the end; an abort leaves the old file and no debris).
 *
 * SFTP clients send writes of 32 KiB or so, many in flight. They are joined here into
 * chunks of `chunkBytes` (1 MiB) before they cross to the worker: each write is copied
 * once, into the chunk's own buffer (which is then moved to the worker, not copied
 * again), and the caller's buffer is free when `write` returns. Writes that
 * arrive ahead of the next expected offset are held and put in order as the gap fills;
 * when held bytes grow past `windowBytes`, the gap before them is taken as a hole
 * (zeros) and the stream moves on. Holes left at close are zeros too. A write that
 * names bytes already sent to the worker cannot be honoured: ENOTSUP (clients that
 * write at random open files without truncation, which go through staging).
 *
 * A write resolves once its bytes are taken, later when more than `windowBytes` wait
 * to cross (backpressure, per handle and per view). An upload error surfaces at a
 * later write or at close. The upload starts with the first full chunk (or at close):
 * a handle opened and left idle holds no transfer.
 */
import type { Entry } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import { asFsError } from './errors.js'
import type { PendingBudget } from './pending.js'

export interface CoalescerOptions {
  readonly chunkBytes: number
  readonly windowBytes: number
  readonly budget: PendingBudget
}

/** Starts the upload of `body`; resolves with the committed entry. */
export type StartUpload = (body: AsyncIterable<Uint8Array>) => Promise<Entry>

type Piece = Uint8Array | { readonly zeros: number }

const ZERO_CHUNK = 1024 * 1024
/** The first buffer of a file, which doubles up to a chunk. */
const FIRST_BUFFER = 64 * 1024

export class WriteCoalescer {
  readonly #startUpload: StartUpload
  readonly #opts: CoalescerOptions
  /** Offset of the first byte not yet queued (everything before it went to the stream). */
  #sent = 0
  /** Contiguous bytes from `#sent`, not yet a chunk: the first `#curBytes` of `#cur`. */
  #cur: Buffer | null = null
  #curBytes = 0
  /** Writes ahead of the contiguous end, by offset. */
  readonly #held = new Map<number, Uint8Array>()
  #heldBytes = 0
  /** Pieces waiting for the upload stream to take them. */
  readonly #queue: Piece[] = []
  #queuedBytes = 0
  /** The file's size as written so far. */
  #size = 0
  #ended = false
  #error: FsError | null = null
  #upload: Promise<Entry> | null = null
  /** The upload's source waiting for a piece. */
  #wakeSource: (() => void) | null = null
  /** Writes waiting for room. */
  #roomWaiters: (() => void)[] = []
  /** Chunks handed to the upload stream, for tests and figures. */
  chunksSent = 0

  constructor(startUpload: StartUpload, opts: CoalescerOptions) {
    this.#startUpload = startUpload
    this.#opts = opts
  }

  get size(): number {
    return this.#size
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    if (this.#error) throw this.#error
    if (this.#ended) throw new FsError('EINVAL', 'the file is closed')
    if (data.byteLength === 0) return
    this.#size = Math.max(this.#size, offset + data.byteLength)
    const end = this.#sent + this.#curBytes
    if (offset < end) {
      if (offset < this.#sent) throw new FsError('ENOTSUP', 'this file is written in order: bytes already sent cannot be rewritten (open it without truncation to write at random)')
      // Rewrites bytes not yet sent: patch them, then go on with the rest.
      const inside = Math.min(data.byteLength, end - offset)
      this.#cur!.set(data.subarray(0, inside), offset - this.#sent)
      if (inside === data.byteLength) return this.#room()
      data = data.subarray(inside)
      offset = end
    }
    if (offset > end) {
      const old = this.#held.get(offset)
      if (old) this.#heldBytes -= old.byteLength
      // The caller's buffer may be reused once we return: a held write keeps a copy.
      this.#held.set(offset, Uint8Array.prototype.slice.call(data))
      this.#heldBytes += data.byteLength
      if (this.#heldBytes > this.#opts.windowBytes) this.#skipHole()
    } else {
      this.#append(data)
    }
    this.#drainHeld()
    return this.#room()
  }

  /** Ends the stream (holes are zeros) and waits for the commit. */
  async close(): Promise<Entry> {
    if (this.#error) throw this.#error
    this.#ended = true
    // Whatever is still held: in offset order, gaps as zeros, overlaps cut.
    for (const off of [...this.#held.keys()].sort((a, b) => a - b)) {
      const data = this.#held.get(off)!
      const end = this.#sent + this.#curBytes
      if (off > end) this.#pushZeros(off - end)
      const from = Math.max(0, end - off)
      if (from < data.byteLength) this.#append(data.subarray(from))
    }
    this.#held.clear()
    this.#heldBytes = 0
    const end = this.#sent + this.#curBytes
    if (this.#size > end) this.#pushZeros(this.#size - end)
    this.#emit(true)
    this.#ensureUpload()
    this.#wake()
    try {
      return await this.#upload!
    } catch (err) {
      throw this.#error ?? asFsError(err)
    }
  }

  /** Stops feeding the upload (its signal is aborted by the handle). */
  abort(err: FsError): void {
    this.#error ??= err
    this.#ended = true
    this.#release()
    this.#queue.length = 0
    this.#cur = null
    this.#curBytes = 0
    this.#held.clear()
    this.#wake()
  }

  /** Copies `data` after the current bytes; every chunk that fills goes to the queue. */
  #append(data: Uint8Array): void {
    for (let at = 0; at < data.byteLength; ) {
      if (this.#curBytes === (this.#cur?.byteLength ?? 0)) this.#grow(data.byteLength - at)
      const n = Math.min(this.#cur!.byteLength - this.#curBytes, data.byteLength - at)
      this.#cur!.set(data.subarray(at, at + n), this.#curBytes)
      this.#curBytes += n
      at += n
      if (this.#curBytes === this.#opts.chunkBytes) this.#emit(false)
    }
  }

  /**
   * Room for `want` more bytes: a whole chunk once the file has passed its first one;
   * before, a buffer that starts at 64 KiB and doubles, so a small file holds no 1 MiB.
   * allocUnsafeSlow: a chunk that owns its ArrayBuffer is moved to the worker, not copied.
   */
  #grow(want: number): void {
    const size = this.#opts.chunkBytes
    const next = this.#sent > 0 ? size : Math.min(size, Math.max(FIRST_BUFFER, 2 * this.#curBytes, this.#curBytes + want))
    const buf = Buffer.allocUnsafeSlow(next)
    if (this.#curBytes > 0) buf.set(this.#cur!.subarray(0, this.#curBytes))
    this.#cur = buf
  }

  #drainHeld(): void {
    for (;;) {
      const end = this.#sent + this.#curBytes
      const next = this.#held.get(end)
      if (!next) return
      this.#held.delete(end)
      this.#heldBytes -= next.byteLength
      this.#append(next)
    }
  }

  /** Too much held: the gap before the first held write is a hole. */
  #skipHole(): void {
    const first = Math.min(...this.#held.keys())
    const end = this.#sent + this.#curBytes
    this.#emit(true)
    this.#pushZeros(first - end)
  }

  /** Moves the current bytes to the queue when they make a chunk (or always, with `all`). */
  #emit(all: boolean): void {
    if (this.#curBytes === 0 || (!all && this.#curBytes < this.#opts.chunkBytes)) return
    const chunk = this.#curBytes === this.#cur!.byteLength ? this.#cur! : this.#cur!.subarray(0, this.#curBytes)
    this.#cur = null
    this.#sent += this.#curBytes
    this.#curBytes = 0
    this.#push(chunk)
  }

  #pushZeros(n: number): void {
    if (n <= 0) return
    this.#emit(true)
    this.#sent += n
    this.#queue.push({ zeros: n })
  }

  #push(chunk: Uint8Array): void {
    this.#queue.push(chunk)
    this.#queuedBytes += chunk.byteLength
    this.#opts.budget.add(chunk.byteLength)
    this.#ensureUpload()
    this.#wake()
  }

  #ensureUpload(): void {
    if (this.#upload) return
    this.#upload = this.#startUpload(this.#source())
    this.#upload.catch((err: unknown) => {
      this.#error ??= asFsError(err)
      this.#release()
    })
  }

  async *#source(): AsyncIterable<Uint8Array> {
    for (;;) {
      if (this.#error) throw this.#error
      const piece = this.#queue.shift()
      if (piece === undefined) {
        if (this.#ended) return
        await new Promise<void>((r) => (this.#wakeSource = r))
        continue
      }
      if (piece instanceof Uint8Array) {
        this.#queuedBytes -= piece.byteLength
        this.#opts.budget.add(-piece.byteLength)
        this.#freeRoom()
        this.chunksSent++
        yield piece
        continue
      }
      for (let left = piece.zeros; left > 0; left -= ZERO_CHUNK) {
        this.chunksSent++
        yield new Uint8Array(Math.min(ZERO_CHUNK, left))
      }
    }
  }

  #wake(): void {
    const w = this.#wakeSource
    this.#wakeSource = null
    w?.()
  }

  #hasRoom(): boolean {
    return this.#queuedBytes <= this.#opts.windowBytes && this.#opts.budget.hasRoom()
  }

  async #room(): Promise<void> {
    while (!this.#hasRoom() && !this.#error) {
      await new Promise<void>((r) => {
        this.#roomWaiters.push(r)
        this.#opts.budget.wait(r)
      })
    }
    if (this.#error) throw this.#error
  }

  #freeRoom(): void {
    if (!this.#hasRoom()) return
    const ws = this.#roomWaiters
    this.#roomWaiters = []
    for (const w of ws) w()
  }

  #release(): void {
    this.#opts.budget.add(-this.#queuedBytes)
    this.#queuedBytes = 0
    const ws = this.#roomWaiters
    this.#roomWaiters = []
    for (const w of ws) w()
  }
}
