/**
 * @module gateways/sftp/wire/framing
 * SFTP packets out of a channel's byte stream: `uint32 length` then `length` bytes,
 * read by the one frame reader (core/frames.ts). A length over the limit is refused
 * before anything is buffered for it, so a client cannot make the gateway hold more
 * than one packet.
 */
import { FrameReader } from '../../../core/frames.js'
import { Malformed } from './codec.js'

export class PacketReader extends FrameReader {
  /** `max`: the largest packet accepted, without its length field. */
  constructor(max: number) {
    super((header) => {
      const len = header.readUInt32BE(0)
      if (len === 0) throw new Malformed('an empty packet')
      if (len > max) throw new Malformed(`a packet of ${len} bytes (at most ${max})`)
      return len
    })
  }

  /** Takes a chunk; calls `onPacket` with each packet completed (type byte first). @throws Malformed */
  override push(chunk: Buffer, onPacket: (packet: Buffer) => void): void {
    super.push(chunk, onPacket)
  }
}
