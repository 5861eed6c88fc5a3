/**
 * @module gateways/sftp/wire/framing
 * SFTP packets out of a channel's byte stream: `uint32 length` then `length` bytes.
 * A packet lying inside one chunk is a view of it (no copy); one spread over chunks is
 * joined once, when complete. A length over the limit is refused before anything is
 * buffered for it, so a client cannot make the gateway hold more than one packet.
 */
import { Malformed } from './codec.js'

export class PacketReader {
  private chunks: Buffer[] = []
  private have = 0
  /** The length of the packet being gathered, once its 4 bytes are in. */
  private need = -1

  /** `max`: the largest packet accepted, without its length field. */
  constructor(private readonly max: number) {}

  /** Takes a chunk; calls `onPacket` with each packet completed (type byte first). @throws Malformed */
  push(chunk: Buffer, onPacket: (packet: Buffer) => void): void {
    this.chunks.push(chunk)
    this.have += chunk.length
    for (;;) {
      if (this.need < 0) {
        if (this.have < 4) return
        const len = this.take(4).readUInt32BE(0)
        if (len === 0) throw new Malformed('an empty packet')
        if (len > this.max) throw new Malformed(`a packet of ${len} bytes (at most ${this.max})`)
        this.need = len
      }
      if (this.have < this.need) return
      const packet = this.take(this.need)
      this.need = -1
      onPacket(packet)
    }
  }

  /** The next `n` bytes (`n` <= `have`). */
  private take(n: number): Buffer {
    this.have -= n
    const first = this.chunks[0]!
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
