/**
 * @module core/chunk-buffer
 * Where the writes of one handle are joined into a chunk (workers/handles/write-coalescer.ts,
 * in-place.ts, and the main thread's batches of small writes): each write is copied once,
 * into a buffer that owns its ArrayBuffer, so the chunk can be moved across threads, not copied again; the
 * caller's buffer is free as soon as the write is taken. Until a full chunk has been
 * taken, a buffer starts at the size of its first write and doubles up to a chunk, so
 * a small file or a lone write is one buffer of its own size (also moved, not copied)
 * and holds no 1 MiB; after, chunks are allocated whole.
 */

export class ChunkBuffer {
  readonly #size: number
  #buf: Buffer | null = null
  #bytes = 0
  #whole = false

  constructor(chunkBytes: number) {
    this.#size = chunkBytes
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes
  }

  get full(): boolean {
    return this.#bytes === this.#size
  }

  /** Copies as much of `data` as fits in this chunk; returns how many bytes it took. */
  add(data: Uint8Array): number {
    let at = 0
    while (at < data.byteLength && !this.full) {
      if (this.#bytes === (this.#buf?.byteLength ?? 0)) this.#grow(data.byteLength - at)
      const n = Math.min(this.#buf!.byteLength - this.#bytes, data.byteLength - at)
      this.#buf!.set(data.subarray(at, at + n), this.#bytes)
      this.#bytes += n
      at += n
    }
    return at
  }

  /** Overwrites held bytes from `at` (`at + data.byteLength` must not pass `bytes`). */
  patch(at: number, data: Uint8Array): void {
    this.#buf!.set(data, at)
  }

  /** The bytes held, as one chunk; the buffer starts empty again. */
  take(): Uint8Array {
    const buf = this.#buf!
    const chunk = this.#bytes === buf.byteLength ? buf : buf.subarray(0, this.#bytes)
    if (this.#bytes === this.#size) this.#whole = true
    this.#buf = null
    this.#bytes = 0
    return chunk
  }

  #grow(want: number): void {
    const next = this.#whole ? this.#size : Math.min(this.#size, Math.max(2 * this.#bytes, this.#bytes + want))
    const buf = Buffer.allocUnsafeSlow(next)
    if (this.#bytes > 0) buf.set(this.#buf!.subarray(0, this.#bytes))
    this.#buf = buf
  }
}
