/**
 * What one SFTP login can make the process hold (issue: a client that opens a huge SSH
 * window and stops reading had 2.26 GiB queued in 14 s; read handles cut mid-read left
 * their read-ahead streams behind after the client left). Memory is this process's
 * (filegate runs in it): `arrayBuffers`, where every Buffer lives, measured after a GC;
 * the pool's live transfers and buffered bytes. Bounds are generous: they tell bounded
 * from unbounded, never a speed.
 */
import { randomBytes } from 'node:crypto'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { call, ssh2Sftp } from './clients.js'
import { startGateway } from './fixture.js'
import { PKT, RawSftp } from './raw-sftp.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const MiB = 1024 * 1024

async function buffersNow(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setTimeout(r, 50))
  }
  return process.memoryUsage().arrayBuffers
}

async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) if (await cond()) return true
  return cond()
}

t.test('a client that opens a huge window and stops reading: bounded, others served, released when it leaves', async (t) => {
  const { login, put } = await startGateway(t, { readOnly: true })
  const data = randomBytes(16 * MiB)
  put('big.bin', data)
  const before = await buffersNow()

  const bad = await RawSftp.open(t, login)
  const h = await bad.openRead('/big.bin')
  if (!Buffer.isBuffer(h)) throw new Error(`open: ${h.message}`)
  bad.openWindow(1024 * MiB)
  bad.stopReading()
  // 1,200 reads of 255 KiB: 300 MiB asked, none of it read by the client.
  for (let i = 0; i < 1200; i++) void bad.read(h, (i * 255 * 1024) % data.length, 255 * 1024)
  let peak = 0
  for (let i = 0; i < 16; i++) {
    await new Promise((r) => setTimeout(r, 500))
    peak = Math.max(peak, process.memoryUsage().arrayBuffers - before)
  }
  t.ok(peak < 128 * MiB, `held while the client does not read: ${(peak / MiB).toFixed(1)} MiB (300 MiB asked)`)

  const { sftp } = await ssh2Sftp(t, login)
  const back = await call<Buffer>(sftp.readFile.bind(sftp), 'big.bin')
  t.ok(back.equals(data), 'another client of the same user downloads the file meanwhile')

  bad.cut()
  t.ok(await until(async () => (await buffersNow()) - before < 48 * MiB, 30_000), 'released once it has left')
})

t.test('read handles cut under reads in flight leave no transfer and no buffer behind', async (t) => {
  const { login, put, app } = await startGateway(t, { readOnly: true })
  for (let i = 0; i < 30; i++) put(`f${i}.bin`, randomBytes(MiB + i))
  const before = await buffersNow()
  for (let round = 0; round < 4; round++) {
    const c = await RawSftp.open(t, login)
    const handles: Buffer[] = []
    for (let i = 0; i < 30; i++) {
      const h = await c.openRead(`/f${i}.bin`)
      if (Buffer.isBuffer(h)) handles.push(h)
    }
    t.equal(handles.length, 30, `round ${round}: 30 read handles`)
    for (const h of handles) {
      void c.read(h, 0, 32 * 1024)
      void c.read(h, 512 * 1024, 32 * 1024)
    }
    c.cut() // with the reads (and the read-ahead streams they start) under way
  }
  t.ok(await until(() => app.pool.stats.transfers === 0 && app.pool.stats.bufferedBytes === 0, 30_000), 'no read-ahead stream left in the pool')
  t.ok(await until(async () => (await buffersNow()) - before < 32 * MiB, 30_000), 'memory back where it was')
})

t.test('an idle read handle holds no read-ahead stream', async (t) => {
  const { login, put, app } = await startGateway(t, { readOnly: true })
  for (let i = 0; i < 10; i++) put(`g${i}.bin`, randomBytes(4 * MiB))
  const c = await RawSftp.open(t, login)
  for (let i = 0; i < 10; i++) {
    const h = await c.openRead(`/g${i}.bin`)
    if (!Buffer.isBuffer(h)) throw new Error(h.message)
    const r = await c.read(h, 0, 32 * 1024)
    t.equal(r.type, PKT.DATA, `g${i}: read`)
  }
  t.ok(await until(() => app.pool.stats.transfers === 0, 20_000), 'the handles stay open; their streams are dropped once idle')
})
