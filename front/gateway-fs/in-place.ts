/**
 * @module front/gateway-fs/in-place
 * Writes into an existing file, in place, where the backend can (the driver's
 * `writeAt`: local folders): appends, resumed uploads, random writes. Contiguous writes
 * are joined into runs of about `chunkBytes` (1 MiB) before they cross to a worker, one
 * task per run, one run in flight after another; a write resolves once its bytes are
 * taken, later when more than `windowBytes` wait. Each run lands as one positional write:
 * atomicity is per run, not per file (a reader may see the file between two runs; an
 * abort keeps the runs already written). An error shows at a later write, a read or close.
 */
import { FsError } from '../../core/errors.js'
import { asFsError } from './errors.js'
import type { PendingBudget } from './pending.js'

/** Writes one run; `data` may be transferred (detached). */
export type WriteRun = (offset: number, data: Uint8Array) => Promise<void>

interface Run {
  readonly offset: number
  parts: Uint8Array[]
  bytes: number
}

export class InPlaceWriter {
  readonly #send: WriteRun
  readonly #chunkBytes: number
  readonly #windowBytes: number
  readonly #budget: PendingBudget
  #run: Run | null = null
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
    this.#chunkBytes = opts.chunkBytes
    this.#windowBytes = opts.windowBytes
    this.#budget = opts.budget
  }

  get size(): number {
    return this.#size
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
    data = Uint8Array.prototype.slice.call(data) // ours: the caller may reuse its buffer
    this.#dirty = true
    this.#size = Math.max(this.#size, offset + data.byteLength)
    const run = this.#run
    if (run && run.offset + run.bytes === offset) {
      run.parts.push(data)
      run.bytes += data.byteLength
    } else {
      this.#hand()
      this.#run = { offset, parts: [data], bytes: data.byteLength }
    }
    this.#waiting += data.byteLength
    this.#budget.add(data.byteLength)
    if (this.#run!.bytes >= this.#chunkBytes) this.#hand()
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
    if (this.#run) this.#settle(this.#run.bytes)
    this.#run = null
  }

  /** Hands the current run to the worker, after the runs before it. */
  #hand(): void {
    const run = this.#run
    if (!run) return
    this.#run = null
    this.#flushing = this.#flushing.then(async () => {
      try {
        if (this.#error) return
        const data = run.parts.length === 1 ? run.parts[0]! : Buffer.concat(run.parts)
        this.chunksSent++
        await this.#send(run.offset, data)
      } catch (err) {
        this.#error ??= asFsError(err)
      } finally {
        this.#settle(run.bytes)
      }
    })
  }

  #settle(bytes: number): void {
    this.#waiting -= bytes
    this.#budget.add(-bytes)
  }
}
