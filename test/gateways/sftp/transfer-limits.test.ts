/**
 * The per-address and per-credential limits on concurrent transfers apply where the
 * gateways open transfers (issue: 88 SFTP transfers from one address, 1,176 stalled S3
 * GETs with one key all served, the limit being 32): a handle that moves a file's bytes
 * counts from its open to its end; past a limit the open is refused in the protocol's
 * shape (SFTP FAILURE saying which limit, S3 503 SlowDown), and a place freed is taken
 * again. Small files (answered whole by one task) are not transfers.
 */
import { randomBytes } from 'node:crypto'
import { GetObjectCommand } from '@aws-sdk/client-s3'
import t from 'tap'
import { startS3Gateway } from '../s3/fixture.js'
import { s3Client } from '../../helpers/s3-client.js'
import { startGateway } from './fixture.js'
import { RawSftp } from './raw-sftp.js'

const FAILURE = 4

t.test('sftp: read handles of large files count against the per-address limit', async (t) => {
  const { login, put } = await startGateway(t, { readOnly: true, config: { transfers_per_address: 8 } })
  for (let i = 0; i < 12; i++) put(`big${i}.bin`, randomBytes(256 * 1024))
  for (let i = 0; i < 12; i++) put(`small${i}.txt`, `small ${i}`)
  const a = await RawSftp.open(t, login)
  const b = await RawSftp.open(t, login) // another connection from the same address
  const opened: Buffer[] = []
  for (let i = 0; i < 4; i++) opened.push((await a.openRead(`/big${i}.bin`)) as Buffer)
  for (let i = 4; i < 8; i++) opened.push((await b.openRead(`/big${i}.bin`)) as Buffer)
  t.ok(opened.every((h) => Buffer.isBuffer(h)), '8 large files open, over two connections')
  const refused = await b.openRead('/big8.bin')
  t.match(refused, { status: FAILURE, message: /too many transfers at once from your address \(at most 8\)/ }, 'the 9th: FAILURE saying which limit')
  for (let i = 0; i < 12; i++) t.ok(Buffer.isBuffer(await a.openRead(`/small${i}.txt`)), `small${i}.txt: small files are no transfer`)
  await a.request(4, [len(opened[0]!)]) // CLOSE
  t.ok(Buffer.isBuffer(await b.openRead('/big8.bin')), 'a handle closed frees its place')
  a.cut()
  let after = false
  for (const deadline = Date.now() + 20_000; !after && Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    after = Buffer.isBuffer(await b.openRead('/big9.bin'))
  }
  t.ok(after, 'a connection that left frees its places')
})

t.test('s3: stalled GETs count against the limit; past it 503 SlowDown', async (t) => {
  const gw = await startS3Gateway(t, { readOnly: true })
  // Larger than what the sockets' buffers take in, so a GET whose body is not read stays under way.
  const data = Buffer.alloc(64 * 1024 * 1024, 7)
  randomBytes(4096).copy(data)
  gw.put('b/big.bin', data)
  // One attempt: an SDK retries SlowDown after a pause, and the test must see the first answer.
  const s3 = s3Client(t, gw.endpoint, gw.key, { checksums: 'when-required', maxAttempts: 1 })
  // Default limit: 32 per address. Each GET's body is left unread: the transfer stalls.
  const stalled = []
  for (let i = 0; i < 32; i++) stalled.push(await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'big.bin' })))
  t.equal(stalled.length, 32, '32 stalled GETs served')
  await t.rejects(s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'big.bin' })), { name: 'SlowDown', $metadata: { httpStatusCode: 503 } }, 'the 33rd: 503 SlowDown')
  for (const s of stalled.splice(0, 4)) (s.Body as unknown as { destroy(): void }).destroy()
  let served = false
  for (const deadline = Date.now() + 20_000; !served && Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    served = await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'big.bin' })).then(
      async (r) => Buffer.from(await r.Body!.transformToByteArray()).equals(data),
      () => false,
    )
  }
  t.ok(served, 'once some are given up, a GET is served whole')
  for (const s of stalled) (s.Body as unknown as { destroy(): void }).destroy()
})

function len(b: Buffer): Buffer {
  const out = Buffer.alloc(4 + b.length)
  out.writeUInt32BE(b.length)
  b.copy(out, 4)
  return out
}
