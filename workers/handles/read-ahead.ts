/**
 * @module workers/handles/read-ahead
 * Reads of an open handle at offsets, served from one read-ahead stream: a read of the
 * file from an offset to its end, from the driver (WORKER THREAD: next to it, in the
 * handle's actor).
 * Sequential reads take their bytes from it; a read a little ahead skips what lies
 * between; any other offset cancels it and starts another. A stream not read for
 * `idleMs` is cancelled, so an idle handle holds no transfer, no backend session and no
 * buffers.
 */
import { FsError } from '../../core/errors.js'
import type { ReadHead } from '../../core/messages.js'
import type { HeadedStream } from '../../core/view.js'
import { asFsError } from './errors.js'

/** A read this far ahead of the stream's position skips the bytes between instead of restarting. */
const SKIP_MAX = 1024 * 1024

export type OpenStream = (offset: number, signal: AbortSignal) => Promise<HeadedStream<ReadHead>>

interface Live {
  readonly ac: AbortController
  readonly stream: HeadedStream<ReadHead>
  readonly it: AsyncIterator<Uint8Array>
  /** File offset of the next byte (the first byte of `rest` when there is one). */
  pos: number
  /** Bytes received and not yet handed out. */
  rest: Uint8Array | null
  eof: boolean
}

export class ReadAhead {
  readonly #open: OpenStream
  readonly #idleMs: number
  #live: Live | null = null
  #timer: NodeJS.Timeout | null = null
  #closed = false
  /** Streams started, for tests and figures. */
  started = 0

  readonly #onChange: () => void

  /** `onChange`: a stream started or stopped (the actor tells the view's figures). */
  constructor(open: OpenStream, idleMs: number, onChange: () => void = () => {}) {
    this.#open = open
    this.#idleMs = idleMs
    this.#onChange = onChange
  }

  /** Whether a stream is open now. */
  get active(): boolean {
    return this.#live !== null
  }

  /** Up to `length` bytes at `offset`; fewer only at the end; empty at or past it. Calls must not overlap. */
  async read(offset: number, length: number): Promise<Uint8Array> {
    if (this.#closed) throw new FsError('ECANCELED', 'the file was closed')
    this.#stopTimer()
    try {
      let live = this.#live
      if (live && (offset < live.pos || offset - live.pos > SKIP_MAX)) {
        this.stop()
        live = null
      }
      if (!live) live = await this.#start(offset)
      const parts: Uint8Array[] = []
      let want = length
      while (want > 0) {
        if (!live.rest) {
          if (live.eof) break
          const next = await live.it.next()
          if (next.done) {
            live.eof = true
            break
          }
          live.rest = next.value
          if (live.rest.byteLength === 0) {
            live.rest = null
            continue
          }
        }
        const skip = offset - live.pos // > 0 only while skipping ahead
        if (skip > 0) {
          const n = Math.min(skip, live.rest.byteLength)
          live.rest = n === live.rest.byteLength ? null : live.rest.subarray(n)
          live.pos += n
          continue
        }
        const take = Math.min(want, live.rest.byteLength)
        parts.push(live.rest.subarray(0, take))
        live.rest = take === live.rest.byteLength ? null : live.rest.subarray(take)
        live.pos += take
        offset += take
        want -= take
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
    } catch (err) {
      this.stop()
      throw asFsError(err)
    } finally {
      this.#armTimer()
    }
  }

  /** Cancels the stream (it is started again by the next read). */
  stop(): void {
    const live = this.#live
    this.#live = null
    this.#stopTimer()
    if (!live) return
    live.ac.abort()
    live.stream.cancel()
    void live.it.return?.().catch(() => {})
    this.#onChange()
  }

  /** No more reads. */
  close(): void {
    this.#closed = true
    this.stop()
  }

  async #start(offset: number): Promise<Live> {
    const ac = new AbortController()
    const stream = await this.#open(offset, ac.signal)
    if (this.#closed) {
      // Closed while the stream was being opened (the connection ended under a READ):
      // nothing would ever stop it, and it would hold its transfer and its first chunk.
      ac.abort()
      stream.cancel()
      throw new FsError('ECANCELED', 'the file was closed')
    }
    this.started++
    const live: Live = { ac, stream, it: stream.body[Symbol.asyncIterator](), pos: offset, rest: null, eof: stream.head.unsatisfiable }
    this.#live = live
    this.#onChange()
    return live
  }

  #armTimer(): void {
    if (!this.#live || this.#closed) return
    // A stream whose bytes all arrived holds nothing in a worker: keep it for the next read.
    this.#timer = setTimeout(() => this.stop(), this.#idleMs)
    this.#timer.unref()
  }

  #stopTimer(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}
