/**
 * @module gateways/sftp/ssh-thread/port-socket
 * SSH THREAD. The client's TCP connection as ssh2 sees it in an SSH thread: a Duplex
 * over the connection's MessagePort, whose other end the main thread holds with the
 * socket (../ssh-threads.ts). Ciphertext from the client is pushed as it comes, and what
 * was taken is told back (the main thread stops reading the socket past its credit);
 * ciphertext for the client written in one turn of the event loop (ssh2 writes each SSH
 * packet on its own) crosses as one moved buffer. `unsent` counts the bytes written
 * that the socket has not yet handed to the system (the send budget's measure).
 */
import { Duplex } from 'node:stream'
import type { MessagePort } from 'node:worker_threads'
import type { FromSsh, ToSsh } from '../thread-messages.js'

/** Taken bytes are told back when this many have gathered (and at the end of each turn). */
const TAKEN_BATCH = 256 * 1024

export class PortSocket extends Duplex {
  readonly remoteAddress: string
  readonly remoteFamily: string
  readonly remotePort: number
  readonly #port: MessagePort
  readonly #onReply: (m: Extract<ToSsh, { t: 'reply' }>) => void
  readonly #onEnded: () => void
  #out: Buffer[] = []
  #outBytes = 0
  #flushQueued = false
  #taken = 0
  #takenQueued = false
  #posted = 0
  #sent = 0
  #closedByMain = false

  constructor(port: MessagePort, peer: { ip: string; family: string; remotePort: number }, hooks: { onReply: (m: Extract<ToSsh, { t: 'reply' }>) => void; onEnded: () => void }) {
    super({ allowHalfOpen: false, decodeStrings: false })
    this.remoteAddress = peer.ip
    this.remoteFamily = peer.family
    this.remotePort = peer.remotePort
    this.#port = port
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
    return this.#posted + this.#outBytes - this.#sent
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
      case 'data': {
        const buf = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength)
        this.push(buf)
        this.#took(buf.byteLength)
        return
      }
      case 'eof':
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

  #took(bytes: number): void {
    this.#taken += bytes
    if (this.#taken >= TAKEN_BATCH) return this.#tellTaken()
    if (this.#takenQueued) return
    this.#takenQueued = true
    setImmediate(() => {
      this.#takenQueued = false
      this.#tellTaken()
    })
  }

  #tellTaken(): void {
    if (this.#taken === 0) return
    this.post({ t: 'taken', bytes: this.#taken })
    this.#taken = 0
  }

  override _read(): void {
    // Bytes are pushed as the main thread sends them; its credit bounds them.
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
    if (this.#flushQueued) return
    this.#flushQueued = true
    setImmediate(() => {
      this.#flushQueued = false
      this.#flush()
    })
  }

  #flush(): void {
    if (this.#outBytes === 0) return
    // One fresh buffer: moved to the main thread, never touched here again.
    const data = new Uint8Array(this.#outBytes)
    let at = 0
    for (const c of this.#out) {
      data.set(c, at)
      at += c.byteLength
    }
    this.#posted += this.#outBytes
    this.#out = []
    this.#outBytes = 0
    this.post({ t: 'data', data }, [data.buffer])
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#flush()
    this.post({ t: 'end' })
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
