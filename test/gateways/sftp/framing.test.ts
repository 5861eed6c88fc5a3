/**
 * SFTP packet framing (gateways/sftp/wire/framing.ts): packets come out whole however the
 * channel cuts the bytes, and a length over the limit is refused before it is buffered.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { PacketReader } from '../../../gateways/sftp/wire/framing.js'

const frame = (body: Buffer): Buffer => {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(body.length)
  return Buffer.concat([len, body])
}

t.test('packets come out whole, whatever the cuts', async (t) => {
  const bodies = [randomBytes(1), randomBytes(300), randomBytes(70_000), randomBytes(5)]
  const stream = Buffer.concat(bodies.map(frame))
  for (const cut of [1, 3, 4, 7, 1000, 32 * 1024, stream.length]) {
    const got: Buffer[] = []
    const r = new PacketReader(256 * 1024)
    for (let p = 0; p < stream.length; p += cut) r.push(stream.subarray(p, p + cut), (b) => got.push(Buffer.from(b)))
    t.same(got, bodies, `cut every ${cut} bytes`)
  }
})

t.test('a length over the limit, or of zero, is refused at once', async (t) => {
  const r = new PacketReader(1024)
  t.throws(() => r.push(Buffer.from([0, 0, 4, 1]), () => {}), { name: 'Malformed', message: /1025 bytes/ }, 'over the limit: refused on its 4 length bytes')
  t.throws(() => new PacketReader(1024).push(Buffer.alloc(4), () => {}), { name: 'Malformed' }, 'an empty packet')
})
