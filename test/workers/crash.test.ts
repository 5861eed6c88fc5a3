/**
 * A worker thread that dies in the middle of a transfer (an SDK crash, an
 * out-of-memory kill) must fail that transfer only: the other worker's transfer
 * completes intact, the failed one is visibly cut (never a short "success"), and
 * the service keeps answering, on a replacement thread.
 */
import { createHash, randomBytes } from 'node:crypto'
import { writeFile, mkdir } from 'node:fs/promises'
import http from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { api, startTestServer, tmpSession } from '../helpers/filegate.js'

const SIZE = 64 * 1024 * 1024

interface Transfer {
  readonly done: Promise<{ ok: boolean; bytes: number; sha: string }>
  resume(): void
}

/** A download the client holds paused after its first bytes, until resume(). */
function pausedDownload(url: string, token: string, path: string): Promise<Transfer> {
  return new Promise((started, fail) => {
    const req = http.get(`${url}/api/files/cat?path=${encodeURIComponent(path)}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      const hash = createHash('sha256')
      let bytes = 0
      const done = new Promise<{ ok: boolean; bytes: number; sha: string }>((resolve) => {
        res.on('data', (c: Buffer) => {
          bytes += c.length
          hash.update(c)
        })
        res.on('end', () => resolve({ ok: res.complete, bytes, sha: hash.digest('hex') }))
        res.on('error', () => resolve({ ok: false, bytes, sha: '' }))
        res.on('aborted', () => resolve({ ok: false, bytes, sha: '' }))
      })
      res.once('data', () => {
        res.pause()
        started({ done, resume: () => res.resume() })
      })
    })
    req.on('error', fail)
  })
}

t.test('killing a worker mid-transfer fails only its transfer', async (t) => {
  const { app, url, dataDir } = await startTestServer(t, { workers: 2 })
  const token = await tmpSession(url, 'crash')
  const content = randomBytes(SIZE)
  const want = createHash('sha256').update(content).digest('hex')
  await mkdir(join(dataDir, 'tmp', 'crash'), { recursive: true })
  await writeFile(join(dataDir, 'tmp', 'crash', 'a.bin'), content)
  await writeFile(join(dataDir, 'tmp', 'crash', 'b.bin'), content)

  // Two transfers held open by their clients: the pool starts each on a different thread
  // (the one with fewest transfers), where it lives on as an actor, holding no task.
  const a = await pausedDownload(url, token, '/a.bin')
  const b = await pausedDownload(url, token, '/b.bin')
  t.equal(app.pool.stats.transfers, 2, 'both transfers are live')
  t.equal(app.pool.stats.running, 0, 'and hold no task')

  const victim = app.pool.threads[0]!
  await victim.terminate()
  a.resume()
  b.resume()
  const results = await Promise.all([a.done, b.done])
  const intact = results.filter((r) => r.ok && r.bytes === SIZE && r.sha === want)
  const cut = results.filter((r) => !r.ok && r.bytes < SIZE)
  t.equal(intact.length, 1, 'the other thread’s transfer completes intact')
  t.equal(cut.length, 1, 'the killed thread’s transfer is visibly cut, not ended as a success')

  // The service keeps serving, on the survivor and on a replacement thread.
  const call = api(url, token)
  for (let i = 0; i < 6; i++) {
    const res = await call('GET', '/api/files/ls', { path: '/' })
    t.equal(res.status, 200, `request ${i} after the crash is served`)
    await res.arrayBuffer()
  }
  const again = await call('GET', '/api/files/cat', { path: '/a.bin' })
  t.equal(createHash('sha256').update(Buffer.from(await again.arrayBuffer())).digest('hex'), want, 'a new download is intact')
  // A thread that dies within a second of starting is replaced after a pause (no respawn loop): wait for it.
  const deadline = Date.now() + 10_000
  while (app.pool.threads.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  t.equal(app.pool.threads.length, 2, 'the pool is back to its size')
})
