/**
 * @module workers/rechunk
 * Re-chunking, written once: bytes arrive in pieces of whatever size the source
 * likes (a socket's 64 KiB reads, an HTTP body's slices, a protocol's replies) and
 * leave in pieces of the size the next stage needs (an SFTP write request, an SMB
 * block, an S3 part, a 1 MiB transferable chunk).
 *
 * Two kinds of output, named where they are asked for:
 * - owned: a fresh Buffer that owns its whole ArrayBuffer (byteOffset 0, nothing
 *   else in it). Only such a buffer can be transferred to another thread without a
 *   copy, and it stays valid whatever the source does with its own buffers later.
 * - views: slices of the input where a piece lies inside one input chunk (no copy),
 *   a concatenation only where it spans chunks. For consumers that copy the bytes
 *   out at once (a protocol encoder writing them into a packet).
 */

/** True when `b` owns its whole ArrayBuffer: it can be transferred without a copy. */
export function ownsBuffer(b: Uint8Array): boolean {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && !(b.buffer instanceof SharedArrayBuffer)
}

const asBuffer = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength))

/** A FIFO of bytes: pushed in any pieces, taken in pieces of the size the taker names. */
export class ByteQueue {
  #chunks: Buffer[] = []
  #size = 0

  /** Bytes held. */
  get size(): number {
    return this.#size
  }

  /** Adds bytes at the end (kept by reference: the caller must not reuse the memory). */
  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return
    this.#chunks.push(asBuffer(chunk))
    this.#size += chunk.byteLength
  }

  /**
   * The next `n` bytes (at most `size`) in an owned buffer. A head chunk of exactly
   * `n` bytes that owns its memory is handed over as it is, not copied.
   */
  take(n: number): Buffer {
    n = Math.min(n, this.#size)
    const head = this.#chunks[0]
    if (head !== undefined && head.byteLength === n && ownsBuffer(head)) {
      this.#chunks.shift()
      this.#size -= n
      return head
    }
    const out = Buffer.allocUnsafeSlow(n)
    this.#copyOut(out, n)
    return out
  }

  /** The next `n` bytes (at most `size`): a view when they lie in one chunk, else a copy. */
  takeView(n: number): Buffer {
    n = Math.min(n, this.#size)
    const head = this.#chunks[0]
    if (head !== undefined && head.byteLength >= n) {
      if (head.byteLength === n) this.#chunks.shift()
      else this.#chunks[0] = head.subarray(n)
      this.#size -= n
      return head.subarray(0, n)
    }
    const out = Buffer.allocUnsafe(n)
    this.#copyOut(out, n)
    return out
  }

  #copyOut(out: Buffer, n: number): void {
    let off = 0
    while (off < n) {
      const c = this.#chunks[0]!
      const k = Math.min(c.byteLength, n - off)
      c.copy(out, off, 0, k)
      off += k
      if (k === c.byteLength) this.#chunks.shift()
      else this.#chunks[0] = c.subarray(k)
    }
    this.#size -= n
  }
}

/**
 * Cuts `body` into pieces of exactly `len` bytes, the last one shorter (none for an
 * empty body). `owned`: every piece is an owned buffer; otherwise views where possible.
 */
export async function* rechunk(body: AsyncIterable<Uint8Array>, len: number, opts: { owned: boolean }): AsyncGenerator<Buffer> {
  const q = new ByteQueue()
  const take = (n: number): Buffer => (opts.owned ? q.take(n) : q.takeView(n))
  for await (const chunk of body) {
    q.push(chunk)
    while (q.size >= len) yield take(len)
  }
  if (q.size > 0) yield take(q.size)
}

/**
 * Cuts each chunk of `body` into views of at most `max` bytes, never joining chunks:
 * no copy at all, at the price of shorter pieces where chunks end. For protocols whose
 * requests may be of any size up to a limit (an SFTP write).
 */
export async function* split(body: AsyncIterable<Uint8Array>, max: number): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    const b = asBuffer(chunk)
    for (let off = 0; off < b.byteLength; off += max) yield b.subarray(off, Math.min(b.byteLength, off + max))
  }
}

