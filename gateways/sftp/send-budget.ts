/**
 * @module gateways/sftp/send-budget
 * A cap on the bytes one connection has on their way to its client. ssh2 hands channel
 * data to the socket as long as the client's SSH window allows, without looking at the
 * socket's own queue, so a client that opens a huge window and stops reading would have
 * every answer pile up in memory. A READ reserves its length here before anything is
 * read, and gives it back once its answer is taken by the channel (then counted by the
 * socket's `writableLength`): bytes read and not yet sent stay within `cap` plus one
 * READ. Past it, READs wait (unanswered; the session's in-flight cap then stops it
 * reading requests) until the socket drains. The connection's end frees everything.
 */
import { FsError } from '../../core/errors.js'

/** What the budget watches: the connection's TCP socket. */
export interface QueuedSocket {
  readonly writableLength: number
  on(event: 'drain' | 'close', fn: () => void): unknown
}

/** Default cap per connection: 8 MiB (about 32 full READs). */
export const SEND_CAP = 8 * 1024 * 1024

export class SendBudget {
  readonly cap: number
  readonly #socket: QueuedSocket
  #reserved = 0
  #closed = false
  readonly #waiters: { readonly bytes: number; readonly resolve: (release: () => void) => void; readonly reject: (err: Error) => void }[] = []

  constructor(socket: QueuedSocket, cap = SEND_CAP) {
    this.cap = cap
    this.#socket = socket
    socket.on('drain', () => this.#wake())
    socket.on('close', () => this.close())
  }

  /** Bytes reserved by READs under way plus those queued on the socket. */
  get queued(): number {
    return this.#reserved + this.#socket.writableLength
  }

  /** Waits for room for `bytes`; resolves with their (idempotent) release. Rejects ECANCELED once the connection is over. */
  reserve(bytes: number): Promise<() => void> {
    if (this.#closed) return Promise.reject(over())
    if (this.#waiters.length === 0 && this.#fits()) return Promise.resolve(this.#grant(bytes))
    return new Promise((resolve, reject) => this.#waiters.push({ bytes, resolve, reject }))
  }

  /** The connection is over: every waiter is refused, nothing more is counted. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    for (const w of this.#waiters.splice(0)) w.reject(over())
  }

  #fits(): boolean {
    return this.#reserved + this.#socket.writableLength < this.cap
  }

  #grant(bytes: number): () => void {
    this.#reserved += bytes
    let released = false
    return () => {
      if (released) return
      released = true
      this.#reserved -= bytes
      this.#wake()
    }
  }

  #wake(): void {
    while (!this.#closed && this.#waiters.length > 0 && this.#fits()) {
      const w = this.#waiters.shift()!
      w.resolve(this.#grant(w.bytes))
    }
  }
}

const over = () => new FsError('ECANCELED', 'the connection is over')
