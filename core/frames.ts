/**
 * @module core/frames
 * Length-prefixed frames out of a byte stream: a 4-byte header that gives the body's
 * length, then the body. What the SFTP gateway reads its packets with
 * (gateways/sftp/wire/framing.ts: `uint32 length`) and the SMB driver its replies
 * (workers/drivers/smb/session.ts: NetBIOS's zero byte and 24-bit length).
 *
 * A frame lying inside one chunk is a view of it (no copy); one spread over chunks is
 * joined once, when complete (only its own bytes are copied, never the backlog). The
 * header is judged as soon as its 4 bytes are in, so a length over a limit is refused
 * before anything is buffered for it.
 */

export const FRAME_HEADER_BYTES = 4

export class FrameReader {
  private chunks: Buffer[] = []
  private have = 0
  /** The body length of the frame being gathered, once its header is in. */
  private need = -1

  /**
   * `lengthOf`: the body's length from a frame's header; it throws to refuse one (a length
   * over the limit, a header of a kind this stream never carries).
   */
  constructor(private readonly lengthOf: (header: Buffer) => number) {}

  /**
   * Takes a chunk; calls `onFrame` with each body completed, in order. A throw from
   * `lengthOf` or `onFrame` leaves the reader unusable: its stream is to be closed.
   */
  push(chunk: Buffer, onFrame: (body: Buffer) => void): void {
    this.chunks.push(chunk)
    this.have += chunk.length
    for (;;) {
      if (this.need < 0) {
        if (this.have < FRAME_HEADER_BYTES) return
        this.need = this.lengthOf(this.take(FRAME_HEADER_BYTES))
      }
      if (this.have < this.need) return
      const body = this.take(this.need)
      this.need = -1
      onFrame(body)
    }
  }

  /** The next `n` bytes (`n` <= `have`). */
  private take(n: number): Buffer {
    this.have -= n
    const first = this.chunks[0]
    if (first === undefined) return Buffer.alloc(0)
    if (first.length >= n) {
      const out = first.subarray(0, n)
      if (first.length === n) this.chunks.shift()
      else this.chunks[0] = first.subarray(n)
      return out
    }
    const out = Buffer.allocUnsafe(n)
    let p = 0
    while (p < n) {
      const c = this.chunks[0]!
      const k = Math.min(c.length, n - p)
      c.copy(out, p, 0, k)
      p += k
      if (k === c.length) this.chunks.shift()
      else this.chunks[0] = c.subarray(k)
    }
    return out
  }
}
