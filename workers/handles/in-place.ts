/**
 * @module workers/handles/in-place
 * Writes into an existing file, in place, where the backend can (the driver's
 * `writeAt`: local folders): appends, resumed uploads, random writes. Contiguous writes
 * are joined into runs of up to `chunkBytes` (1 MiB; chunk-buffer.ts: one copy of each
 * write) before the driver's `writeAt` takes them (WORKER THREAD, in the handle's actor), one run
 * after another; a write resolves once its bytes are taken, later when more than
 * `windowBytes` wait. Each run lands as one positional write:
 * atomicity is per run, not per file (a reader may see the file between two runs; an
 * abort keeps the runs already written). An error shows at a later write, a read or close.
 */
import { FsError } from '../../core/errors.js'
import { ChunkBuffer } from '../../core/chunk-buffer.js'
import { asFsError } from './errors.js'
import type { PendingBudget } from '../../core/pending-budget.js'

/** Writes one run; `data` may be transferred (detached). */
export type WriteRun = (offset: number, data: Uint8Array) => Promise<void>

export class InPlaceWriter {
  readonly #send: WriteRun
  readonly #windowBytes: number
  readonly #budget: PendingBudget
  /** The run being joined: its bytes, and the file offset of the first one. */
  readonly #run: ChunkBuffer
  #runAt = 0
  /** Runs handed over, in order. */
  #flushing: Promise<void> = Promise.resolve()
  /** Bytes taken and not yet written by a worker. */
  #waiting = 0
  #size: number
  #error: FsError | null = null
  #dirty = false
  chunksSent = 0

  constructor(send: WriteRun, initialSize: number, opts: { chunkBytes: number; windowBytes: number; budget: PendingBudget }) {
    this.#send = send
    this.#size = initialSize
    this.#run = new ChunkBuffer(opts.chunkBytes)
    this.#windowBytes = opts.windowBytes
    this.#budget = opts.budget
  }

  get size(): number {
    return this.#size
  }

  /** After the file was cut or extended by other means (a truncate once every write landed). */
  resized(size: number): void {
    this.#size = size
    this.#dirty = true
  }

  /** True once after any write: a read stream opened before it may hold stale bytes. */
  takeDirty(): boolean {
    const d = this.#dirty
    this.#dirty = false
    return d
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    if (this.#error) throw this.#error
    if (data.byteLength === 0) return
    this.#dirty = true
    this.#size = Math.max(this.#size, offset + data.byteLength)
    this.#waiting += data.byteLength
    this.#budget.add(data.byteLength)
    for (let at = 0; at < data.byteLength; ) {
      if (this.#run.bytes === 0 || this.#runAt + this.#run.bytes !== offset + at) {
        this.#hand()
        this.#runAt = offset + at
      }
      at += this.#run.add(data.subarray(at))
      if (this.#run.full) this.#hand()
    }
    while ((this.#waiting > this.#windowBytes || !this.#budget.hasRoom()) && !this.#error) await this.#flushing
    if (this.#error) throw this.#error
  }

  /** Every write so far has landed. */
  async flush(): Promise<void> {
    this.#hand()
    await this.#flushing
    if (this.#error) throw this.#error
  }

  close(): Promise<void> {
    return this.flush()
  }

  abort(err: FsError): void {
    this.#error ??= err
    if (this.#run.bytes > 0) this.#settle(this.#run.take().byteLength)
  }

  /** Hands the current run to the worker, after the runs before it. */
  #hand(): void {
    if (this.#run.bytes === 0) return
    const offset = this.#runAt
    const data = this.#run.take()
    const bytes = data.byteLength
    this.#flushing = this.#flushing.then(async () => {
      try {
        if (this.#error) return
        this.chunksSent++
        await this.#send(offset, data)
      } catch (err) {
        this.#error ??= asFsError(err)
      } finally {
        this.#settle(bytes)
      }
    })
  }

  #settle(bytes: number): void {
    this.#waiting -= bytes
    this.#budget.add(-bytes)
  }
}
