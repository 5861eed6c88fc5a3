/**
 * @module core/port-stream
 * A credit-based byte stream over a MessagePort, used in both directions:
 * downloads (worker writes, main thread reads) and uploads (main thread writes,
 * worker reads).
 *
 * Why credits: `postMessage` has no backpressure. The reader grants credits (one
 * per chunk it may receive) as its consumer pulls; the writer waits for a credit
 * before it pulls the next chunk from its source, so a stream whose reader stops
 * holds nothing on the writer's side.
 *
 * Windows grow only for consumers that read: a reader starts with one chunk in
 * flight and counts the chunk its consumer holds (the one being sent to a client)
 * against it, so a consumer that stops reading holds about one chunk. Each time the
 * consumer comes back and finds nothing queued (it is waiting on the stream), the
 * window doubles, up to `maxWindow`. Every reader of a process may share one
 * `ByteBudget`: the bytes queued or held by consumers, plus an estimate for credits
 * in flight, stay within it; a reader that cannot reserve waits for bytes to be freed.
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
  | { readonly t: 'data'; readonly buf: ArrayBuffer; readonly n: number }
  | { readonly t: 'end' }
  | { readonly t: 'error'; readonly error: WireError }

export type ControlFrame = { readonly t: 'credit'; readonly n: number } | { readonly t: 'cancel' }

/** Largest window, in chunks. With 1 MiB chunks: 8 MiB per stream at most. */
export const DEFAULT_WINDOW = 8
/** Bytes reserved from a budget per credit in flight, until the chunk's real size is known. */
const CREDIT_ESTIMATE = 1024 * 1024

const canceled = () => new FsError('ECANCELED', 'the stream was cancelled by its reader')
const lost = () => new FsError('EIO', 'the stream ended without finishing (its thread exited)')

/**
 * Bytes buffered by streams, bounded. `take` refuses beyond the limit, except for a
 * stream's first chunk (`floor`): a stream that holds nothing may always move one
 * chunk, so streams whose consumers stopped, however many, never stop another stream.
 * The bytes held are then at most the limit plus one chunk per stream, and the number of
 * streams is bounded by the transfer limits (docs/transfers.md). `give` frees and wakes
 * waiters in order.
 */
export class ByteBudget {
  readonly limit: number
  #used = 0
  /** Waiters in order; each returns true when it is served, false to keep its place. */
  readonly #waiters: (() => boolean)[] = []

  constructor(limit: number) {
    this.limit = limit
  }

  get used(): number {
    return this.#used
  }

  take(n: number, floor = false): boolean {
    if (!floor && this.#used > 0 && this.#used + n > this.limit) return false
    this.#used += n
    return true
  }

  /** Corrects a reservation by the real size (may pass the limit by that difference). */
  adjust(delta: number): void {
    this.#used += delta
    if (delta < 0) this.#wake()
  }

  give(n: number): void {
    if (n === 0) return
    this.#used -= n
    this.#wake()
  }

  /**
   * Queues `fn` for when bytes are freed: it runs then, first in line first, and returns
   * true once served (it leaves the line) or false to wait on at the head. Returns a
   * function that leaves the line.
   */
  whenFreed(fn: () => boolean): () => void {
    this.#waiters.push(fn)
    return () => {
      const i = this.#waiters.indexOf(fn)
      if (i >= 0) this.#waiters.splice(i, 1)
    }
  }

  #wake(): void {
    while (this.#waiters.length > 0 && this.#used < this.limit) {
      if (!this.#waiters[0]!()) return
      this.#waiters.shift()
    }
  }
}

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

  /**
   * Sends a chunk, which the caller hands over: a chunk that spans its whole ArrayBuffer
   * is transferred (the caller's view is detached), any other is copied (so is one whose
   * memory cannot be transferred). Returns false
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
    try {
      this.#port.postMessage({ t: 'data', buf, n: chunk.byteLength } satisfies StreamFrame, [buf])
    } catch (err) {
      // Memory a native addon allocated (sharp's output, for one) backs an ArrayBuffer that
      // Node 21+ refuses to transfer (DataCloneError; Node 20 copied it silently): send a copy.
      if (buf !== chunk.buffer || (err as Error).name !== 'DataCloneError') throw err
      const copy = new ArrayBuffer(chunk.byteLength)
      new Uint8Array(copy).set(chunk)
      this.#port.postMessage({ t: 'data', buf: copy, n: chunk.byteLength } satisfies StreamFrame, [copy])
    }
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

  /**
   * Writes every chunk of `source`, then ends. The next chunk is pulled only once there is
   * a credit for it, so a reader that stops leaves nothing pulled here. Errors of `source`
   * fail the stream; a cancel stops `source` (its `return()`) and rejects ECANCELED.
   */
  async pipeFrom(source: AsyncIterable<Uint8Array>): Promise<void> {
    const it = source[Symbol.asyncIterator]()
    let done = false
    try {
      for (;;) {
        await this.drained()
        if (this.#state !== 'open') break
        const r = await it.next()
        if (r.done) {
          done = true
          break
        }
        this.write(r.value)
      }
    } catch (err) {
      done = true // a throwing source has finished; drained() threw: returned below
      if (this.#state === 'canceled') await it.return?.().catch(() => {})
      this.fail(err)
      throw err
    } finally {
      if (!done) await it.return?.().catch(() => {})
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

  /** Stops the stream from this side: the reader sees ECANCELED. */
  cancel(): void {
    this.fail(canceled())
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

export interface ReaderOptions {
  /** Largest window in chunks (it starts at one). */
  readonly maxWindow?: number
  /** Shared bound on buffered bytes. */
  readonly budget?: ByteBudget
  /** Called once when the stream is over on this side (ended, failed, cancelled, lost). */
  readonly onClose?: () => void
}

export class PortReader implements AsyncIterable<Uint8Array> {
  readonly #port: MessagePort
  readonly #max: number
  readonly #budget: ByteBudget | null
  #onDone: (() => void) | null
  readonly #queue: Uint8Array[] = []
  #window = 1
  /** Credits granted whose chunk has not arrived. */
  #inFlight = 0
  /** Budget bytes held: estimates for credits in flight, queued chunks, the consumer's chunk. */
  #held = 0
  /** Size of the chunk the consumer holds (counted in `#held`), or -1. */
  #consumerHolds = -1
  #unwait: (() => void) | null = null
  #error: FsError | null = null
  #ended = false
  #closed = false
  #started = false
  #waiter: (() => void) | null = null

  constructor(port: MessagePort, opts: ReaderOptions = {}) {
    this.#port = port
    this.#max = Math.max(1, opts.maxWindow ?? DEFAULT_WINDOW)
    this.#budget = opts.budget ?? null
    this.#onDone = opts.onClose ?? null
    port.on('message', this.#onMessage)
    port.once('close', this.#onClose)
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array, void, undefined> {
    if (this.#started) throw new Error('a PortReader can be iterated once')
    this.#started = true
    try {
      for (;;) {
        const returned = this.#consumerHolds >= 0
        this.#release()
        if (returned && this.#queue.length === 0 && !this.#ended && !this.#error) {
          // The consumer is done with its chunk and finds nothing queued: it reads faster
          // than the stream brings bytes, so its window grows.
          this.#window = Math.min(this.#max, this.#window * 2)
        }
        const chunk = this.#queue.shift()
        if (chunk) {
          this.#consumerHolds = chunk.byteLength
          this.#topUp()
          yield chunk
          continue
        }
        if (this.#error) throw this.#error
        if (this.#ended) return
        if (this.#closed) throw canceled()
        this.#topUp()
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

  /** The consumer is done with the chunk it held. */
  #release(): void {
    if (this.#consumerHolds < 0) return
    this.#give(this.#consumerHolds)
    this.#consumerHolds = -1
  }

  /** Grants credits up to the window; when the budget is short, waits in its line for the rest. */
  #topUp(): void {
    if (this.#unwait) {
      // Already in line for the rest; a stream that holds nothing still takes its chunk.
      if (this.#held === 0) this.#grant()
      return
    }
    if (!this.#grant()) return
    const fn = () => {
      if (this.#grant()) return false
      this.#unwait = null
      return true
    }
    this.#unwait = this.#budget!.whenFreed(fn)
  }

  /** Grants what the window and the budget allow. Returns true when the budget gave less than wanted. */
  #grant(): boolean {
    if (this.#ended || this.#error || this.#closed) return false
    let want = this.#window - this.#inFlight - this.#queue.length - (this.#consumerHolds >= 0 ? 1 : 0)
    let n = 0
    for (; want > 0; want--) {
      // A stream that holds nothing takes its one chunk whatever the others hold.
      if (this.#budget && !this.#budget.take(CREDIT_ESTIMATE, this.#held === 0)) break
      this.#held += CREDIT_ESTIMATE
      n++
    }
    if (n > 0) {
      this.#inFlight += n
      this.#port.postMessage({ t: 'credit', n } satisfies ControlFrame)
    }
    return want > 0
  }

  #give(n: number): void {
    this.#held -= n
    this.#budget?.give(n)
  }

  #wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.#waiter = resolve))
  }

  #wakeUp(): void {
    const w = this.#waiter
    this.#waiter = null
    w?.()
  }

  #onMessage = (frame: StreamFrame): void => {
    switch (frame.t) {
      case 'data':
        if (this.#inFlight > 0) {
          // The estimate reserved for this credit becomes the chunk's real size.
          this.#inFlight--
          this.#held += frame.n - CREDIT_ESTIMATE
          this.#budget?.adjust(frame.n - CREDIT_ESTIMATE)
        } else {
          this.#held += frame.n // a writer past its credits: counted all the same
          this.#budget?.adjust(frame.n)
        }
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
    this.#done()
    this.#wakeUp()
  }

  #close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#port.off('message', this.#onMessage)
    this.#port.off('close', this.#onClose)
    this.#port.close()
    this.#done()
    this.#wakeUp()
  }

  /** Frees everything this stream held and tells the owner. Once. */
  #done(): void {
    this.#unwait?.()
    this.#unwait = null
    this.#queue.length = 0
    this.#consumerHolds = -1
    this.#give(this.#held)
    const fn = this.#onDone
    this.#onDone = null
    fn?.()
  }
}
