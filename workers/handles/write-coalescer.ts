/**
 * @module workers/handles/write-coalescer
 * A file written from offset 0 (a new or truncated file: the common `put`) is one
 * atomic upload (the driver's write into a hidden temporary file,
 * renamed over the target at the end; an abort leaves the old file and no debris).
 *
 * SFTP clients send writes of 32 KiB or so, many in flight. They are joined here into
 * chunks of `chunkBytes` (1 MiB) before the driver takes them (chunk-buffer.ts: one
 * copy of each write; WORKER THREAD, in the handle's actor: the main thread only batches
 * small writes into fewer messages, gateways/connection/file-handle.ts). Writes that arrive ahead of the next expected offset are held
 * and put in order as the gap fills; when held bytes grow past `windowBytes`, the gap
 * before them is taken as a hole (zeros) and the stream moves on. Holes left at close are zeros too. A write that
 * names bytes already given to the driver cannot be honoured: ENOTSUP (clients that
 * write at random open files without truncation, which go through staging).
 *
 * A large write given away by its caller (an HTTP body's chunk: `give`) that lands at
 * the end, in order, goes to the driver as it is (moved, not copied): a PUT's body is not copied
 * into chunks; SFTP's writes, not given, are copied as above.
 *
 * A write resolves once its bytes are taken, later when more than `windowBytes` wait
 * for the driver (backpressure: the actor returns the main thread's credit then). An upload error surfaces at a
 * later write or at close. The upload starts with the first full chunk (or at close):
 * a handle opened and left idle holds no transfer.
 */
import type { Entry } from '../../core/driver.js'
import { FsError } from '../../core/errors.js'
import { ChunkBuffer } from '../../core/chunk-buffer.js'
import { asFsError } from './errors.js'
import type { PendingBudget } from '../../core/pending-budget.js'

export interface CoalescerOptions {
  readonly chunkBytes: number
  readonly windowBytes: number
  readonly budget: PendingBudget
}

/** Starts the upload of `body`; resolves with the committed entry. */
export type StartUpload = (body: AsyncIterable<Uint8Array>) => Promise<Entry>

type Piece = Uint8Array | { readonly zeros: number }

const ZERO_CHUNK = 1024 * 1024

export class WriteCoalescer {
  readonly #startUpload: StartUpload
  readonly #opts: CoalescerOptions
  /** Offset of the first byte not yet queued (everything before it went to the stream). */
  #sent = 0
  /** Contiguous bytes from `#sent`, not yet a chunk. */
  #cur: ChunkBuffer
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
  #uploadOver = false
  /** The upload's source waiting for a piece. */
  #wakeSource: (() => void) | null = null
  /** Writes waiting for room. */
  #roomWaiters: (() => void)[] = []
  /** Chunks handed to the upload stream, for tests and figures. */
  chunksSent = 0

  constructor(startUpload: StartUpload, opts: CoalescerOptions) {
    this.#startUpload = startUpload
    this.#opts = opts
    this.#cur = new ChunkBuffer(opts.chunkBytes)
  }

  get size(): number {
    return this.#size
  }

  /** The upload is under way (started, not over). */
  get uploading(): boolean {
    return this.#upload !== null && !this.#uploadOver
  }

  async write(offset: number, data: Uint8Array, give = false): Promise<void> {
    if (this.#error) throw this.#error
    if (this.#ended) throw new FsError('EINVAL', 'the file is closed')
    if (data.byteLength === 0) return
    this.#size = Math.max(this.#size, offset + data.byteLength)
    const end = this.#sent + this.#cur.bytes
    if (offset < end) {
      if (offset < this.#sent) throw new FsError('ENOTSUP', 'this file is written in order: bytes already sent cannot be rewritten (open it without truncation to write at random)')
      // Rewrites bytes not yet sent: patch them, then go on with the rest.
      const inside = Math.min(data.byteLength, end - offset)
      this.#cur.patch(offset - this.#sent, data.subarray(0, inside))
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
    } else if (give && data.byteLength >= this.#opts.chunkBytes / 4) {
      // Large and the caller's no more: it crosses as it is, after what was joined before it.
      this.#emit(true)
      this.#sent += data.byteLength
      this.#push(data)
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
      const end = this.#sent + this.#cur.bytes
      if (off > end) this.#pushZeros(off - end)
      const from = Math.max(0, end - off)
      if (from < data.byteLength) this.#append(data.subarray(from))
    }
    this.#held.clear()
    this.#heldBytes = 0
    const end = this.#sent + this.#cur.bytes
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

  /** Resolves once the upload, if one started, is over either way (an aborted one has removed its temporary file). */
  settled(): Promise<void> {
    return (this.#upload ?? Promise.resolve()).then(
      () => {},
      () => {},
    )
  }

  /** Stops feeding the upload (its signal is aborted by the handle). */
  abort(err: FsError): void {
    this.#error ??= err
    this.#ended = true
    this.#release()
    this.#queue.length = 0
    this.#cur = new ChunkBuffer(this.#opts.chunkBytes)
    this.#held.clear()
    this.#wake()
  }

  /** Copies `data` after the current bytes; every chunk that fills goes to the queue. */
  #append(data: Uint8Array): void {
    for (let at = 0; at < data.byteLength; ) {
      at += this.#cur.add(data.subarray(at))
      if (this.#cur.full) this.#emit(false)
    }
  }

  #drainHeld(): void {
    for (;;) {
      const end = this.#sent + this.#cur.bytes
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
    const end = this.#sent + this.#cur.bytes
    this.#emit(true)
    this.#pushZeros(first - end)
  }

  /** Moves the current bytes to the queue when they make a chunk (or always, with `all`). */
  #emit(all: boolean): void {
    if (this.#cur.bytes === 0 || (!all && !this.#cur.full)) return
    const chunk = this.#cur.take()
    this.#sent += chunk.byteLength
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
    this.#upload.then(
      () => void (this.#uploadOver = true),
      () => void (this.#uploadOver = true),
    )
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
