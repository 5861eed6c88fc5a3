/**
 * @module core/port-stream
 * A credit-based byte stream over a MessagePort, used in both directions:
 * downloads (worker writes, main thread reads) and uploads (main thread writes,
 * worker reads).
 *
 * Why credits: `postMessage` has no backpressure. The reader grants credits (one
 * per chunk it may receive) as its consumer pulls; the writer's `write()` returns
 * false when credits run out and `drained()` resolves when more arrive. A writer may
 * overshoot (a producer that cannot stop at once, like a socket being paused), but a
 * well-behaved one stops at zero, so a stream holds at most about `window` chunks.
 *
 * A chunk that spans its whole ArrayBuffer is transferred, any other is copied: a
 * view into a larger buffer (a pooled Buffer, a slice of a socket read) shares memory
 * with others, and Node 21+ throws on transferring a pooled Buffer (Node 20 copies
 * silently). Producers that allocate one buffer per chunk get zero-copy moves.
 *
 * Each side has one idempotent `finish`: it removes the listener and closes the port.
 * Cancellation is a frame (`cancel`), never a killed thread.
 */
import type { MessagePort } from 'node:worker_threads'
import { FsError, type WireError, fromWire, toWire } from './errors.js'

export type StreamFrame =
  | { readonly t: 'head'; readonly value: unknown }
  | { readonly t: 'data'; readonly buf: ArrayBuffer; readonly n: number }
  | { readonly t: 'end' }
  | { readonly t: 'error'; readonly error: WireError }

export type ControlFrame = { readonly t: 'credit'; readonly n: number } | { readonly t: 'cancel' }

/** Default chunks in flight per stream. With 1 MiB chunks: 8 MiB per stream at most. */
export const DEFAULT_WINDOW = 8

const canceled = () => new FsError('ECANCELED', 'the stream was cancelled by its reader')
const lost = () => new FsError('EIO', 'the stream ended without finishing (its thread exited)')

export class PortWriter {
  readonly #port: MessagePort
  #credits = 0
  #state: 'open' | 'done' | 'canceled' = 'open'
  #wake: (() => void) | null = null
  readonly #abort = new AbortController()

  constructor(port: MessagePort) {
    this.#port = port
    port.on('message', this.#onMessage)
    port.once('close', this.#onClose)
  }

  /** Aborted when the reader cancels or goes away. */
  get signal(): AbortSignal {
    return this.#abort.signal
  }

  get open(): boolean {
    return this.#state === 'open'
  }

  /** Sends the stream's metadata; needs no credit. */
  head(value: unknown): void {
    if (this.#state === 'open') this.#port.postMessage({ t: 'head', value } satisfies StreamFrame)
  }

  /**
   * Sends a chunk, which the caller hands over: a chunk that spans its whole ArrayBuffer
   * is transferred (the caller's view is detached), any other is copied. Returns false
   * when out of credit: wait for `drained()` before writing more.
   */
  write(chunk: Uint8Array): boolean {
    if (this.#state !== 'open') return false
    if (chunk.byteLength === 0) return this.#credits > 0
    let buf: ArrayBuffer
    if (chunk.byteOffset === 0 && chunk.buffer instanceof ArrayBuffer && chunk.byteLength === chunk.buffer.byteLength) {
      buf = chunk.buffer
    } else {
      buf = new ArrayBuffer(chunk.byteLength)
      new Uint8Array(buf).set(chunk)
    }
    this.#port.postMessage({ t: 'data', buf, n: chunk.byteLength } satisfies StreamFrame, [buf])
    this.#credits--
    return this.#credits > 0
  }

  /** Resolves when the reader grants credit; rejects ECANCELED when it cancelled. */
  async drained(): Promise<void> {
    while (this.#credits <= 0) {
      if (this.#state === 'canceled') throw canceled()
      if (this.#state === 'done') return
      await new Promise<void>((resolve) => (this.#wake = resolve))
    }
  }

  /** Writes every chunk of `source`, honouring credits, then ends. Errors of `source` fail the stream. */
  async pipeFrom(source: AsyncIterable<Uint8Array>): Promise<void> {
    try {
      for await (const chunk of source) {
        if (this.#state !== 'open') break
        if (!this.write(chunk)) await this.drained()
      }
    } catch (err) {
      this.fail(err)
      throw err
    }
    if (this.#state === 'canceled') throw canceled()
    this.end()
  }

  end(): void {
    if (this.#state !== 'open') return
    this.#port.postMessage({ t: 'end' } satisfies StreamFrame)
    this.#finish('done')
  }

  fail(err: unknown): void {
    if (this.#state !== 'open') return
    this.#port.postMessage({ t: 'error', error: toWire(err) } satisfies StreamFrame)
    this.#finish('done')
  }

  #onMessage = (frame: ControlFrame): void => {
    if (frame.t === 'credit') {
      this.#credits += frame.n
      this.#wakeUp()
    } else if (frame.t === 'cancel') {
      this.#finish('canceled')
    }
  }

  #onClose = (): void => {
    // The reader closed without ending or cancelling: treat as a cancel.
    if (this.#state === 'open') this.#finish('canceled')
  }

  #wakeUp(): void {
    const w = this.#wake
    this.#wake = null
    w?.()
  }

  #finish(state: 'done' | 'canceled'): void {
    if (this.#state !== 'open') return
    this.#state = state
    this.#port.off('message', this.#onMessage)
    this.#port.off('close', this.#onClose)
    if (state === 'canceled') {
      this.#abort.abort(canceled())
      this.#port.close()
    }
    // On 'done' the reader closes the port once it has read the last frame: closing here
    // could drop frames still queued.
    this.#wakeUp()
  }
}

type Pending = { resolve: () => void }

export class PortReader implements AsyncIterable<Uint8Array> {
  readonly #port: MessagePort
  readonly #window: number
  readonly #queue: Uint8Array[] = []
  #head: { value: unknown } | null = null
  #error: FsError | null = null
  #ended = false
  #closed = false
  #started = false
  #waiter: Pending | null = null

  constructor(port: MessagePort, window = DEFAULT_WINDOW) {
    this.#port = port
    this.#window = window
    port.on('message', this.#onMessage)
    port.once('close', this.#onClose)
  }

  /** The stream's head frame. Rejects with the stream's error if it fails first. */
  async head<T>(): Promise<T> {
    while (this.#head === null) {
      if (this.#error) throw this.#error
      if (this.#ended) throw new FsError('EIO', 'the stream ended without a head')
      await this.#wait()
    }
    return this.#head.value as T
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array, void, undefined> {
    if (this.#started) throw new Error('a PortReader can be iterated once')
    this.#started = true
    try {
      this.#grant(this.#window)
      for (;;) {
        const chunk = this.#queue.shift()
        if (chunk) {
          this.#grant(1)
          yield chunk
          continue
        }
        if (this.#error) throw this.#error
        if (this.#ended) return
        if (this.#closed) throw canceled()
        await this.#wait()
      }
    } finally {
      // Reached on end, on error and when the consumer stops early (return()).
      this.cancel()
    }
  }

  /** Ends the stream with `err` (unless it already ended): a pending read rejects with it. */
  fail(err: FsError): void {
    if (this.#ended || this.#error) return
    this.#error = err
    this.cancel()
  }

  /** Stops the stream: the writer sees a cancel. Idempotent; harmless after the end. */
  cancel(): void {
    if (this.#closed) return
    if (!this.#ended) this.#port.postMessage({ t: 'cancel' } satisfies ControlFrame)
    this.#close()
  }

  #grant(n: number): void {
    if (!this.#ended && !this.#error && !this.#closed) this.#port.postMessage({ t: 'credit', n } satisfies ControlFrame)
  }

  #wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.#waiter = { resolve }))
  }

  #wakeUp(): void {
    const w = this.#waiter
    this.#waiter = null
    w?.resolve()
  }

  #onMessage = (frame: StreamFrame): void => {
    switch (frame.t) {
      case 'head':
        this.#head = { value: frame.value }
        break
      case 'data':
        this.#queue.push(new Uint8Array(frame.buf, 0, frame.n))
        break
      case 'end':
        this.#ended = true
        break
      case 'error':
        this.#error = fromWire(frame.error)
        break
    }
    this.#wakeUp()
  }

  #onClose = (): void => {
    if (!this.#ended && !this.#error) this.#error = lost()
    this.#closed = true
    this.#wakeUp()
  }

  #close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#port.off('message', this.#onMessage)
    this.#port.off('close', this.#onClose)
    this.#port.close()
    this.#wakeUp()
  }
}
