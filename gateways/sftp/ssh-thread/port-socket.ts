/**
 * @module gateways/sftp/ssh-thread/port-socket
 * SSH THREAD. The client's TCP connection as ssh2 sees it in an SSH thread: a Duplex
 * whose bytes come and go through two shared-memory rings (../byte-ring.ts), whose other
 * ends the main thread holds with the socket (../ssh-threads.ts); the connection's
 * MessagePort carries the wake-ups and everything else. Ciphertext from the client is
 * pushed as it comes (the ring bounds what the main thread reads ahead: it stops reading
 * the socket when the ring is full); ciphertext for the client is copied into the other
 * ring at the end of each turn of the event loop (ssh2 writes each SSH packet on its
 * own), and queued here while that ring is full. `unsent` counts the bytes written that
 * the socket has not yet handed to the system (the send budget's measure).
 */
import { Duplex } from 'node:stream'
import type { MessagePort } from 'node:worker_threads'
import { ByteRing } from '../byte-ring.js'
import type { FromSsh, ToSsh } from '../thread-messages.js'

export class PortSocket extends Duplex {
  readonly remoteAddress: string
  readonly remoteFamily: string
  readonly remotePort: number
  readonly #port: MessagePort
  readonly #in: ByteRing
  readonly #outRing: ByteRing
  readonly #onReply: (m: Extract<ToSsh, { t: 'reply' }>) => void
  readonly #onEnded: () => void
  #out: Uint8Array[] = []
  #outBytes = 0
  #flushQueued = false
  #waitingForRoom = false
  #ending = false
  #written = 0
  #sent = 0
  #closedByMain = false

  constructor(
    port: MessagePort,
    rings: { readonly in: SharedArrayBuffer; readonly out: SharedArrayBuffer },
    peer: { ip: string; family: string; remotePort: number },
    hooks: { onReply: (m: Extract<ToSsh, { t: 'reply' }>) => void; onEnded: () => void },
  ) {
    super({ allowHalfOpen: false, decodeStrings: false })
    this.remoteAddress = peer.ip
    this.remoteFamily = peer.family
    this.remotePort = peer.remotePort
    this.#port = port
    this.#in = new ByteRing(rings.in)
    this.#outRing = new ByteRing(rings.out)
    this.#onReply = hooks.onReply
    this.#onEnded = hooks.onEnded
    port.on('message', (m: ToSsh) => this.#onMessage(m))
    port.once('close', () => {
      this.#closedByMain = true
      this.destroy()
    })
  }

  /** Bytes written and not yet handed to the system by the main thread's socket. */
  get unsent(): number {
    return this.#written + this.#outBytes - this.#sent
  }

  /** Sends a message of the connection's own on its port (calls, logs, counters). */
  post(m: FromSsh, transfer: ArrayBuffer[] = []): void {
    if (this.#closedByMain) return
    try {
      this.#port.postMessage(m, transfer)
    } catch {
      // The port is closed: the connection is over.
    }
  }

  #onMessage(m: ToSsh): void {
    switch (m.t) {
      case 'more':
        return this.#take()
      case 'room':
        this.#waitingForRoom = false
        return this.#flush()
      case 'eof':
        this.#take()
        this.push(null)
        return
      case 'close':
        this.#closedByMain = true
        this.destroy()
        return
      case 'sent':
        this.#sent += m.bytes
        this.emit('sent')
        return
      case 'reply':
        this.#onReply(m)
        return
      case 'ended':
        this.#onEnded()
        return
    }
  }

  /** What the client sent, from the ring. */
  #take(): void {
    if (this.destroyed) return
    const { data, room } = this.#in.read()
    if (room) this.post({ t: 'room' })
    if (data !== null) this.push(data)
  }

  override _read(): void {
    // Bytes are pushed as the main thread wakes this thread; the ring bounds them.
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#queue(chunk)
    cb()
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    for (const c of chunks) this.#queue(c.chunk)
    cb()
  }

  #queue(chunk: Buffer): void {
    this.#out.push(chunk)
    this.#outBytes += chunk.byteLength
    if (this.#flushQueued || this.#waitingForRoom) return
    this.#flushQueued = true
    setImmediate(() => {
      this.#flushQueued = false
      this.#flush()
    })
  }

  /** Copies what is queued into the ring, as far as it has room; waits for room for the rest. */
  #flush(): void {
    if (this.#waitingForRoom || this.#closedByMain) return
    let wake = false
    while (this.#out.length > 0) {
      const c = this.#out[0]!
      const w = this.#outRing.write(c)
      wake ||= w.wake
      this.#written += w.n
      this.#outBytes -= w.n
      if (w.n === c.byteLength) {
        this.#out.shift()
        continue
      }
      this.#out[0] = c.subarray(w.n)
      if (this.#outRing.waitForRoom()) {
        this.#waitingForRoom = true
        break
      }
    }
    if (wake) this.post({ t: 'more' })
    if (this.#ending && this.#out.length === 0) {
      this.#ending = false
      this.post({ t: 'end' })
    }
  }

  override _final(cb: (err?: Error | null) => void): void {
    // The end follows the last bytes (the main thread reads the ring before it ends the socket).
    this.#ending = true
    this.#flush()
    cb()
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#flush()
    if (!this.#closedByMain) this.post({ t: 'destroy' })
    this.#port.removeAllListeners('message')
    this.#port.close()
    cb(err)
  }
}
