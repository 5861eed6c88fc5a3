/**
 * The one frame reader (core/frames.ts), with the SMB driver's NetBIOS header (a zero
 * type byte, a 24-bit length): frames come out whole and in order however the socket
 * cuts the bytes, an empty frame is a frame, and a header the rule refuses stops the
 * reader before any of its body is buffered. (The SFTP rule over the same reader:
 * test/gateways/sftp/framing.test.ts.)
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { FrameReader } from '../../core/frames.js'

const netbios = (head: Buffer): number => {
  if (head[0] !== 0) throw new Error(`NetBIOS message type ${head[0]}`)
  return head.readUInt32BE(0) & 0xffffff
}
const frame = (body: Buffer): Buffer => {
  const head = Buffer.alloc(4)
  head.writeUInt32BE(body.length)
  return Buffer.concat([head, body])
}

t.test('frames come out whole and in order, whatever the cuts', async (t) => {
  const bodies = [randomBytes(64), Buffer.alloc(0), randomBytes(70_000), randomBytes(3), randomBytes(20_000)]
  const stream = Buffer.concat(bodies.map(frame))
  for (const cut of [1, 2, 4, 5, 999, 65_536, stream.length]) {
    const got: Buffer[] = []
    const r = new FrameReader(netbios)
    for (let p = 0; p < stream.length; p += cut) r.push(stream.subarray(p, p + cut), (b) => got.push(Buffer.from(b)))
    t.same(got, bodies, `cut every ${cut} bytes`)
  }
})

t.test('a frame inside one chunk is a view of it, not a copy', async (t) => {
  const chunk = Buffer.concat([frame(Buffer.from('abc')), frame(Buffer.from('defg'))])
  const got: Buffer[] = []
  new FrameReader(netbios).push(chunk, (b) => got.push(b))
  t.same(got.map((b) => b.toString()), ['abc', 'defg'])
  t.equal(got[0]!.buffer, chunk.buffer, 'same memory as the chunk')
})

t.test('a header the rule refuses throws on its 4 bytes', async (t) => {
  const r = new FrameReader(netbios)
  let called = false
  t.throws(() => r.push(Buffer.from([0x85, 0, 0, 0]), () => (called = true)), /NetBIOS message type 133/)
  t.notOk(called, 'nothing delivered')
  t.doesNotThrow(() => new FrameReader(netbios).push(Buffer.from([0, 0xff, 0xff]), () => {}), 'three bytes are not a header yet')
})
